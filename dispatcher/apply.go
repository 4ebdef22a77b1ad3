package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/clock"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
)

// errConflict: the record changed under the step; reload and reapply.
var errConflict = errors.New("run record changed concurrently")

// errNoRun: a non-start input for a run that has no record (yet: another
// dispatcher may still be saving its start).
var errNoRun = errors.New("no such run")

// step applies one input to its run, reloading and reapplying after each
// lost compare-and-swap race until Config.ConflictTimeout, paced and
// measured by Config.Clock.
func (d *Dispatcher) step(ctx context.Context, in *step.Input, seq uint64, now float64, log *slog.Logger) (string, error) {
	b := backoff.WithContext(backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(2*time.Millisecond),
		backoff.WithMaxInterval(250*time.Millisecond),
		backoff.WithMaxElapsedTime(d.cfg.ConflictTimeout),
		backoff.WithClockProvider(d.cfg.Clock),
	), ctx)
	reload := false
	return backoff.RetryNotifyWithTimerAndData(func() (string, error) {
		outcome, err := d.attempt(ctx, in, seq, now, reload, log)
		if errors.Is(err, errConflict) {
			d.m.conflicts.Inc()
			// Doubted, not dropped: a reload that finds the revision
			// this process last flushed must not publish it again.
			d.cache.doubt(in.RunID)
			reload = true
			return "", err
		}
		if err != nil {
			return "", backoff.Permanent(err)
		}
		return outcome, nil
	}, b, nil, &clock.RetryTimer{Clock: d.cfg.Clock})
}

// attempt is one load-apply-save-publish pass.
func (d *Dispatcher) attempt(ctx context.Context, in *step.Input, seq uint64, now float64, reload bool, log *slog.Logger) (outcome string, err error) {
	// tr is nil unless tracing is on (trace.go).
	tr := d.beginTrace(in, seq)
	if tr != nil {
		defer func() { tr.end(ctx, outcome, err) }()
	}
	cur, found, err := d.load(ctx, in.RunID, reload, in.Kind == subjects.KindStart)
	tr.loaded(cur, found)
	over := false // the start creates its run over a tombstone
	if re, ok := removedRun(err); ok {
		if !reusable(in, re, now) {
			return d.onRemoved(ctx, in, re, log)
		}
		over, err = true, nil // cur holds only the tombstone's revision
	}
	if err != nil {
		return "", err
	}
	if cur, err = d.postponePaused(ctx, in, cur, now, log); err != nil {
		return "", err
	}
	defs := step.DefinitionsFunc(func(name, revision string) (*step.Definition, error) {
		return d.loader.Load(ctx, name, revision)
	})
	res, err := step.Step(d.settings, step.Run{Record: cur.rec, State: cur.st}, in, seq, now, defs)
	if err == nil && res.Outcome == step.Rewind {
		res, err = d.rewind(ctx, in, res.Run, seq, now, defs, log)
	}
	if err != nil {
		return "", err
	}
	// A start that creates its run opens the run's root span once its
	// record is created (below); every other pass opens its span now.
	creates := in.Kind == subjects.KindStart && !found && res.Outcome == step.Applied
	if !creates {
		ctx = tr.open(ctx, res, false)
	}
	switch res.Outcome {
	case step.Duplicate:
		// A redelivery of an input the record already reflects: only make
		// sure its effects went out.
		if err := d.flush(ctx, in.RunID, cur); err != nil {
			return "", err
		}
		if c, ok := d.unsure.take(in.RunID, seq); ok {
			d.count(c, log) // its save timed out but was stored
		}
		if s := cur.rec.Status; s != nil && run.Status(s.Status).Terminal() {
			d.cache.drop(in.RunID) // as the step that settled it would have
		}
		log.Info("dispatcher: redelivered input already applied")
		return outcomeDuplicate, nil
	case step.NoRun:
		return "", errNoRun
	case step.Failed:
		return "", res.Reason
	case step.Remove:
		// The settled run's outbox owes nothing the removal does not
		// undo (its timers are purged with it).
		return d.remove(ctx, in, seq, cur, res.Removed, log)
	}
	if res.Outcome == step.Rejected {
		// The state is unchanged: keep the one the step decoded.
		cur.st = res.Run.State
	}
	if found {
		// The outbox is about to be replaced: publish what it still owes.
		// cur must stay the record as stored, state included: flush
		// caches it, and a save that fails after it must leave the cache
		// as it was, or the input's redelivery would meet the state it
		// had already made and be refused as stale.
		if err := d.flush(ctx, in.RunID, cur); err != nil {
			return "", err
		}
	}
	if res.Outcome == step.Rejected {
		outcome, err = d.reject(ctx, in, cur, found, res, log)
		if found {
			tr.saved(true, err)
		}
		return outcome, err
	}
	next, status := res.Run.State, res.Status
	d.writePage(ctx, in.RunID, cur.st, next, res.Run.Record, log)
	saved, err := d.save(ctx, in.RunID, res.Run.Record, next, cur.rev, found || over)
	tr.saved(found, err)
	if creates {
		ctx = tr.open(ctx, res, err == nil)
	}
	// The save made the step: count it now. A flush that fails below
	// leaves the input to a redelivery that meets it applied and only
	// flushes, so counting after the flush missed every run started or
	// settled under a publish that timed out; so did counting only here
	// when the save itself timed out but was stored (unsureSaves).
	counts := unsureCounts{started: in.Kind == subjects.KindStart, workflow: next.Workflow, revision: next.Revision}
	if status != nil && run.Status(status.Status).Terminal() {
		counts.settled = status.Status
	}
	if err != nil {
		if !errors.Is(err, errConflict) && (counts.started || counts.settled != "") {
			d.unsure.put(in.RunID, seq, counts)
		}
		return "", err
	}
	d.unsure.take(in.RunID, seq) // it was not stored after all
	d.count(counts, log)
	if err := d.hook(hookAfterSave, in); err != nil {
		return "", err
	}
	if err := d.flush(ctx, in.RunID, saved); err != nil {
		return "", err
	}
	if err := d.hook(hookAfterPublish, in); err != nil {
		return "", err
	}
	if res.Outcome == step.Applied {
		d.closeTask(ctx, in, cur, log)
	}
	for _, ig := range res.Ignored {
		log.Info("dispatcher: event ignored", slog.String("event", ig.Type), slog.String("reason", ig.Reason))
	}
	if counts.settled != "" {
		d.cache.drop(in.RunID)
	}
	return outcomeApplied, nil
}

// count takes a step's counts once its save stood.
func (d *Dispatcher) count(c unsureCounts, log *slog.Logger) {
	if c.started {
		d.m.started.Inc()
		log.Info("dispatcher: run started", slog.String("workflow", c.workflow), slog.String("revision", c.revision))
	}
	if c.settled != "" {
		d.m.settled.WithLabelValues(c.settled).Inc()
		log.Info("dispatcher: run settled", slog.String("status", c.settled))
	}
}

// reject saves the record of an input the reducer refused, so that its
// redelivery is recognised, and acknowledges it. It logs the rejection
// only once it stands: after a lost compare-and-swap the input is applied
// again on the fresh record, where it may well be accepted.
func (d *Dispatcher) reject(ctx context.Context, in *step.Input, cur cached, found bool, res step.Result, log *slog.Logger) (string, error) {
	if found {
		if _, err := d.save(ctx, in.RunID, res.Run.Record, cur.st, cur.rev, true); err != nil {
			return "", err
		}
		// The outbox is unchanged and was flushed before applying.
		if c, ok := d.cache.get(in.RunID); ok {
			c.published = true
			d.cache.put(in.RunID, c)
		}
	}
	log.Warn("dispatcher: input rejected", slog.String("reason", res.Reason.Error()))
	return outcomeRejected, nil
}

// reusable reports whether a start may create its run over the
// tombstone re: the run id is free again once the tombstone's time is up
// (wire.Removed.Until), by the start's own time. The server expires a
// tombstone in passes, and a replica that recovered after a kill may keep
// one for good (docs/RELIABILITY.md, finding 25); neither holds the id.
func reusable(in *step.Input, re *runrecord.RemovedError, now float64) bool {
	return in.Kind == subjects.KindStart && re.Removed.Until > 0 && now >= re.Removed.Until
}

// load returns the run's record from the cache or the store. After a
// conflict it reads through the stream leader: a replica may not have
// the winner's write yet. For a start it reads nothing: the run almost
// never exists, and if it does, Create says so (a conflict, then a read).
func (d *Dispatcher) load(ctx context.Context, runID string, afterConflict, start bool) (cached, bool, error) {
	if c, ok := d.cache.get(runID); ok && !afterConflict {
		return c, true, nil
	}
	if start && !afterConflict {
		return cached{}, false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	defer cancel()
	var opts []kvstore.ReadOption
	if afterConflict {
		opts = append(opts, kvstore.FromLeader())
	}
	data, rev, err := d.store.Get(ctx, runID, opts...)
	if errors.Is(err, kvstore.ErrRunNotFound) {
		return cached{}, false, nil
	}
	if err != nil {
		return cached{}, false, err
	}
	rec, err := runrecord.Decode(data)
	if _, ok := removedRun(err); ok {
		return cached{rev: rev}, false, err // the tombstone's revision (reusable)
	}
	if err != nil {
		return cached{}, false, fmt.Errorf("%w: run %s: %w", step.ErrPermanent, runID, err)
	}
	return cached{rec: rec, rev: rev, published: d.cache.publishedAt(runID, rev, rec), acked: d.cache.ackedAt(runID, rev, rec)}, true, nil
}

// save writes rec by compare-and-swap against rev (create when !exists).
func (d *Dispatcher) save(ctx context.Context, runID string, rec *runrecord.Record, st *run.State, rev uint64, exists bool) (cached, error) {
	data, err := rec.Encode()
	if err != nil {
		return cached{}, fmt.Errorf("%w: encode record: %w", step.ErrPermanent, err)
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	defer cancel()
	var next uint64
	if d.cfg.hooks != nil && d.cfg.hooks.save != nil {
		err = d.cfg.hooks.save(runID)
	}
	switch {
	case err != nil:
	case exists:
		next, err = d.store.Update(ctx, runID, data, rev)
	default:
		next, err = d.store.Create(ctx, runID, data)
	}
	if err == nil && d.cfg.hooks != nil && d.cfg.hooks.stored != nil {
		err = d.cfg.hooks.stored(runID)
	}
	if errors.Is(err, kvstore.ErrStale) || errors.Is(err, kvstore.ErrRunExists) {
		return cached{}, fmt.Errorf("%w: %w", errConflict, err)
	}
	if err != nil {
		// A write that timed out may have been stored or not: read the
		// record again next time rather than trust the cache, but
		// remember which outbox was published (recordCache.publishedAt).
		d.cache.doubt(runID)
		return cached{}, err
	}
	c := cached{rec: rec, rev: next, st: st}
	d.cache.put(runID, c)
	return c, nil
}

// flush publishes the record's outbox unless this process already did,
// then, for a run done, cancelled or terminated that ever armed a timer,
// purges its schedules.
func (d *Dispatcher) flush(ctx context.Context, runID string, c cached) error {
	if c.published || len(c.rec.Outbox) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	defer cancel()
	out := c.rec.Outbox
	removal, bucket := d.removals(ctx, runID, c)
	if len(removal) > 0 {
		// Not part of the record: it depends on the deployment's
		// retention, which replay does not know.
		out = append(out[:len(out):len(out)], removal...)
	}
	acked, err := d.pub.publishRest(ctx, out, c.acked)
	if err != nil {
		// Doubt the record: by the time this run's next input comes,
		// another dispatcher may have moved it on, and flushing this
		// outbox then would re-arm or disarm timers the run no longer
		// has (a schedule is one message per subject). What was stored
		// is remembered for a reload that finds this revision.
		d.cache.put(runID, cached{rec: c.rec, rev: c.rev, acked: acked, doubted: true})
		return err
	}
	if bucket != 0 {
		d.markScheduled(bucket)
	}
	if c.rec.Status != nil && purges(run.Status(c.rec.Status.Status)) && c.rec.SweepsTimers() {
		d.purgeTimers(ctx, runID)
	}
	c.published = true
	d.cache.put(runID, c)
	return nil
}

// purges reports whether a run that settled in status has its pending
// timer schedules purged: when done, cancelled or terminated, for good. A failed run
// keeps them, because a redrive can take it back to running and arm new
// ones, which a purge carried out late (a dispatcher slow between its
// save and its flush, or flushing a stale cached record) would remove,
// leaving the run without a way forward. Its deadline timer was disarmed
// by the step that failed it; any other pending timer that fires is
// rejected as no longer armed.
func purges(status run.Status) bool {
	return status == run.StatusDone || status == run.StatusCancelled || status == run.StatusTerminated
}

// purgeTimers removes a settled run's pending timer schedules. It is
// housekeeping only: a timer that fires anyway is rejected as stale.
func (d *Dispatcher) purgeTimers(ctx context.Context, runID string) {
	// d.timers is set by Start before any step runs and never cleared.
	if err := d.timers.Purge(ctx, jetstream.WithPurgeSubject(d.cfg.Names.Schedule(runID, ">"))); err != nil {
		d.log.Warn("dispatcher: purge timers of settled run", slog.String("run_id", runID), slog.Any("error", err))
	}
}
