package dispatcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/payload"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// Retention (docs/ARCHITECTURE.md, "Retention"): a settled run's flush
// also publishes its removal schedule, due at the settlement's time plus
// the retention; it fires into the input stream as a removal input; the
// step judges it (only the settlement it was scheduled for); a removal
// that stands replaces the record by a tombstone with a TTL, then purges
// the run's history and timer schedules, then acknowledges. A redelivery
// after a crash meets the tombstone and finishes the purges.

// errRemoved: the run was removed by retention; the input is terminated
// with the tombstone's reason (it wraps a *runrecord.RemovedError).
var errRemoved = errors.New("run removed")

// deferredError: a removal input met a redrive or reset of its run that
// came after the settlement and was not taken yet; the removal input is
// handed back until until, when it is judged again.
type deferredError struct {
	run   string
	until time.Time
	// why is the reason, when not a redrive or reset (a child's parent
	// that has not settled).
	why string
}

func (e *deferredError) Error() string {
	why := e.why
	if why == "" {
		why = "a redrive or reset of the run came after its settlement"
	}
	return fmt.Sprintf("removal of run %s deferred until %s: %s", e.run, e.until.UTC().Format(time.RFC3339Nano), why)
}

// tombstoner is a RunStore that can replace a record by a tombstone with
// a TTL; *kvstore.RunStore is one.
type tombstoner interface {
	Tombstone(ctx context.Context, runID string, data []byte, rev uint64, ttl time.Duration) (uint64, error)
	TakesKeyTTLs(ctx context.Context) (bool, error)
}

// retention is what Start found out about removing runs.
type retention struct {
	// on: removal schedules are published (Config.Retention is not
	// negative, or a deployment may set its own, and the run bucket
	// takes tombstones).
	on bool
	// keepHistory: the input stream denies purges (made before
	// retention); removals leave the history to its MaxAge.
	keepHistory bool
	// batched: removals go by bucket (reaper.go), not one schedule and
	// one removal input per run.
	batched bool
}

// startRetention checks what removal needs and says what it cannot do.
func (d *Dispatcher) startRetention(ctx context.Context, inputs jetstream.Stream) retention {
	ts, ok := d.store.(tombstoner)
	if !ok {
		return retention{}
	}
	ttl, err := ts.TakesKeyTTLs(ctx)
	if err != nil || !ttl {
		d.log.Warn("dispatcher: retention is off: the run bucket takes no per-key TTLs, which tombstones need (provision it again: jetflow dispatcher --provision); settled runs are kept",
			slog.Any("error", err))
		return retention{}
	}
	r := retention{on: true, keepHistory: inputs.CachedInfo().Config.DenyPurge}
	if r.keepHistory && d.cfg.Retention > 0 {
		d.log.Warn("dispatcher: the input stream denies purges (it was made before retention, and the server never undoes that): removed runs keep their history until the stream's MaxAge; to erase it, recreate the stream (docs/ARCHITECTURE.md, Retention)",
			slog.String("stream", d.cfg.Names.InputStream()))
	}
	return r
}

// retentionOf is how long runs of the workflow revision are kept after
// they settle; 0 or less keeps them for ever.
func (d *Dispatcher) retentionOf(ctx context.Context, workflow, revision string) time.Duration {
	def, err := d.loader.Load(ctx, workflow, revision)
	if err != nil || def.Retention == nil {
		// A revision that no longer loads cannot have runs to step: its
		// settled runs fall under the deployment's default.
		return d.cfg.Retention
	}
	return *def.Retention
}

// archiveOf says whether runs of the workflow revision are archived
// before they are removed.
func (d *Dispatcher) archiveOf(ctx context.Context, workflow, revision string) bool {
	def, err := d.loader.Load(ctx, workflow, revision)
	if err != nil || def.Archive == nil {
		return d.cfg.Archive
	}
	return *def.Archive
}

// removals is what removes the settled run of c when its retention is
// over: its due entry (and its bucket's schedule) when removals are
// batched, else its own removal schedule; nothing when nothing removes
// it. bucket, if not 0, is to be marked scheduled once they are stored.
func (d *Dispatcher) removals(ctx context.Context, runID string, c cached) (out []runrecord.Outgoing, bucket int64) {
	rec := c.rec
	s := rec.Status
	if !d.ret.on || s == nil || !run.Status(s.Status).Terminal() {
		return nil, 0
	}
	keep := d.retentionOf(ctx, s.Workflow, s.Revision)
	if keep <= 0 {
		return nil, 0
	}
	due := time.UnixMilli(int64(s.Time)).Add(keep).UTC()
	if d.ret.batched {
		out, bucket, err := d.dueEntry(runID, wire.Due{
			Run: runID, Workflow: s.Workflow, Revision: s.Revision, Status: s.Status, Settled: s.Time,
			Retention: float64(keep.Milliseconds()), Rev: c.rev, Timers: rec.SweepsTimers(),
			Archive: d.archiveOf(ctx, s.Workflow, s.Revision), Seq: lastApplied(rec), Parent: parentOf(rec),
			Inputs: d.inputsOf(c),
		}, due)
		if err != nil {
			return nil, 0
		}
		return out, bucket
	}
	data, err := json.Marshal(wire.Expire{Settled: s.Time, Status: s.Status, Retention: float64(keep.Milliseconds())})
	if err != nil {
		return nil, 0
	}
	names := d.cfg.Names
	return []runrecord.Outgoing{{
		// One removal per settlement; a repeat within the duplicate
		// window stores nothing, a later one replaces the schedule.
		ID: runID + "/expire/" + strconv.FormatFloat(s.Time, 'f', -1, 64), Kind: runrecord.OutTimer,
		Subject: names.Expiry(runID), Data: data,
		Header: map[string]string{
			wire.HeaderSchedule: "@at " + due.Format(time.RFC3339Nano),
			// It fires on the run's timer subject, which the input stream's
			// source copies in; the mark says it is a removal.
			wire.HeaderScheduleTarget: names.Fired(runID),
			wire.HeaderScheduleTTL:    wire.FiredTimerTTLValue,
			wire.HeaderRunID:          runID,
			wire.HeaderExpire:         "1",
		},
	}}, 0
}

// inputsOf is every input of the run of c, for a removal that purges
// them one at a time (purgeRemoved): nil when its record may not name
// them all, or the run wrote sequence pages, which another purge takes.
// A record read without its state (an archive's, a removal's after a
// conflict) has it decoded: cheap beside the purges it saves.
func (d *Dispatcher) inputsOf(c cached) []uint64 {
	st := c.st
	if st == nil {
		var err error
		if st, err = step.DecodeState(c.rec); err != nil {
			return nil
		}
	}
	if st.Seq >= int64(min(runrecord.PageSize, d.settings.AppliedHistory)) {
		return nil
	}
	return c.rec.Inputs(d.settings.AppliedHistory, d.settings.RejectedHistory)
}

// remove carries out a removal the step let stand, its own input at
// seq: the tombstone by compare-and-swap, then the purges.
func (d *Dispatcher) remove(ctx context.Context, in *step.Input, seq uint64, cur cached, removed *wire.Removed, log *slog.Logger) (string, error) {
	ts, ok := d.store.(tombstoner)
	if !ok || !d.ret.on {
		return "", fmt.Errorf("run %s is due for removal but this dispatcher cannot write tombstones (%w); another dispatcher will", in.RunID, kvstore.ErrNoKeyTTL)
	}
	// As a bucket of removals does (deferRemoval): a redrive or reset
	// stored after the settling input, not taken yet, goes first.
	last, err := d.revivals(ctx, []string{in.RunID})
	if err != nil {
		return "", err
	}
	if until, later := d.lateRevival(last[in.RunID], lastApplied(cur.rec), removed.Settled); later {
		log.Info("dispatcher: removal deferred: a redrive or reset of the run came after its settlement",
			slog.Uint64("input_seq", last[in.RunID].Sequence), slog.Time("until", until))
		return "", &deferredError{run: in.RunID, until: until}
	}
	if p := parentOf(cur.rec); p != "" {
		wait, err := d.parentUnsettled(ctx, p)
		if err != nil {
			return "", err
		}
		if wait != "" {
			until := d.cfg.Clock.Now().Add(childRecheck(time.Duration(removed.Until-removed.At) * time.Millisecond))
			log.Info("dispatcher: removal deferred: the child's parent has not settled", slog.String("parent", p), slog.Time("until", until))
			return "", &deferredError{run: in.RunID, until: until, why: wait}
		}
	}
	r := *removed
	r.HistoryKept = d.ret.keepHistory
	if d.archiveOf(ctx, r.Workflow, r.Revision) {
		// As a batched removal does: the record and history first; a crash
		// after it leaves the record, and the redelivery archives again.
		r.Archived = true
		if err := d.archiveRun(ctx, r, cur.rec); err != nil {
			d.m.removalFailures.Inc()
			return "", err
		}
	}
	data, err := runrecord.EncodeRemoved(r)
	if err != nil {
		return "", fmt.Errorf("%w: encode tombstone: %w", step.ErrPermanent, err)
	}
	// Before the tombstone, which leaves no record to name them.
	d.finalPage(ctx, in.RunID, cur.rec, log)
	life := time.Duration(r.Until-r.At) * time.Millisecond
	wctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	_, err = ts.Tombstone(wctx, in.RunID, data, cur.rev, life)
	cancel()
	if errors.Is(err, kvstore.ErrStale) {
		return "", fmt.Errorf("%w: %w", errConflict, err)
	}
	if err != nil {
		d.m.removalFailures.Inc()
		return "", err
	}
	d.cache.drop(in.RunID)
	if err := d.hook(hookAfterTombstone, in); err != nil {
		return "", err
	}
	// One input a purge, as a bucket of removals does; the removal's own
	// input, which fired into the run's history, last. A run that never
	// armed a timer (but its attempts' deadline, which settling disarms)
	// has no timer schedule to purge.
	inputs := d.inputsOf(cur)
	if n := len(inputs); n > 0 && seq > inputs[n-1] {
		inputs = append(inputs, seq)
	}
	if err := d.purgeRemoved(ctx, in.RunID, inputs, cur.rec.SweepsTimers(), true, nil); err != nil {
		return "", err
	}
	d.m.removed.WithLabelValues(r.Status).Inc()
	log.Info("dispatcher: run removed by retention", slog.String("status", r.Status),
		slog.Time("settled", time.UnixMilli(int64(r.Settled))), slog.Bool("history_kept", r.HistoryKept))
	return outcomeRemoved, nil
}

// purgeRemoved erases a removed run's history (unless the input stream
// denies purges) and what it has in the timer stream: its fired timers
// and removal schedule (timerMsgs; a batched removal leaves none but
// fired timers, which only a run that armed timers has) and its timers'
// schedules (timers), and its payload objects: those listing names (a
// bucket of removals lists the payload bucket once per batch), or, with
// no listing, those a listing made for this run alone finds. Purges are
// idempotent: a redelivered removal meets the tombstone and purges again.
func (d *Dispatcher) purgeRemoved(ctx context.Context, runID string, inputs []uint64, timers, timerMsgs bool, listing *payloadListing) error {
	// Each request has its own round trip's time: a run of 128 inputs
	// makes 128 purges.
	purge := func(s jetstream.Stream, opts ...jetstream.StreamPurgeOpt) error {
		ctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
		defer cancel()
		return s.Purge(ctx, opts...)
	}
	if !d.ret.keepHistory {
		// The inputs its record names one at a time: a purge up to each
		// but the last, then one that takes what is left (usually that
		// last input alone; the whole history when inputs is nil). A purge
		// that takes several messages makes the server count every input
		// consumer's pending messages again, a walk of the stream's
		// subjects for each; one that takes one message does not. Every
		// purge stays within the run's own subjects.
		history := jetstream.WithPurgeSubject(d.cfg.Names.RunInputs(runID))
		for i := range max(len(inputs), 1) {
			opts := []jetstream.StreamPurgeOpt{history}
			if i < len(inputs)-1 {
				opts = append(opts, jetstream.WithPurgeSequence(inputs[i]+1))
			}
			if err := purge(d.inputs, opts...); err != nil {
				d.m.removalFailures.Inc()
				return fmt.Errorf("purge the history of removed run %s from %s: %w", runID, d.cfg.Names.InputStream(), err)
			}
		}
		if d.pg.on && inputs == nil {
			if err := purge(d.inputs, jetstream.WithPurgeSubject(d.cfg.Names.RunPages(runID))); err != nil {
				d.m.removalFailures.Inc()
				return fmt.Errorf("purge the sequence pages of removed run %s from %s: %w", runID, d.cfg.Names.InputStream(), err)
			}
		}
	}
	pctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	n, err := listing.remove(pctx, d.payloads, runID)
	cancel()
	if err != nil {
		d.m.removalFailures.Inc()
		return fmt.Errorf("remove the payloads of removed run %s from %s: %w", runID, d.cfg.Names.PayloadBucket(), err)
	} else if n > 0 {
		d.log.Info("dispatcher: payloads of removed run deleted", slog.String("run_id", runID), slog.Int("objects", n))
	}
	if rs, ok := d.store.(*kvstore.RunStore); ok {
		rs.Forget(runID)
	}
	// Its timers' schedules, then what it left on its own subjects: fired
	// timers and the fired removal (kept for days otherwise, in case the
	// input stream's source lagged) and its removal schedule.
	var subjects []string
	if timerMsgs {
		subjects = append(subjects, d.cfg.Names.RunTimerMessages(runID))
	}
	if timers {
		subjects = append(subjects, d.cfg.Names.Schedule(runID, ">"))
	}
	for _, subj := range subjects {
		if err := purge(d.timers, jetstream.WithPurgeSubject(subj)); err != nil {
			d.m.removalFailures.Inc()
			return fmt.Errorf("purge %s of removed run %s from %s: %w", subj, runID, d.cfg.Names.TimerStream(), err)
		}
	}
	return nil
}

// payloadListing is the payload bucket's objects by run, listed once
// for a batch of removals instead of once per run (a look at the bucket's
// size was a stream info request per removed run).
type payloadListing struct {
	byRun map[string][]string
}

// listPayloads lists the payload bucket for a batch of removals.
func (d *Dispatcher) listPayloads(ctx context.Context) (*payloadListing, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	defer cancel()
	byRun, err := d.payloads.ByRun(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the payloads of runs due for removal: %w", err)
	}
	return &payloadListing{byRun: byRun}, nil
}

// remove deletes runID's payload objects: those l lists, or, when l is
// nil, those the bucket holds now.
func (l *payloadListing) remove(ctx context.Context, ps *payload.Store, runID string) (int, error) {
	if l == nil {
		return ps.RemoveRun(ctx, runID)
	}
	return ps.DeleteAll(ctx, l.byRun[runID])
}

// removedRun returns the tombstone error in err, if any.
func removedRun(err error) (*runrecord.RemovedError, bool) {
	var re *runrecord.RemovedError
	ok := errors.As(err, &re)
	return re, ok
}

// onRemoved handles an input of a run whose record is a tombstone: a
// redelivered removal finishes its purges, anything else is refused with
// the tombstone's reason.
func (d *Dispatcher) onRemoved(ctx context.Context, in *step.Input, re *runrecord.RemovedError, log *slog.Logger) (string, error) {
	if in.Kind != subjects.KindExpire {
		return "", fmt.Errorf("%w: %w", errRemoved, re)
	}
	// The record is gone: purge its timers' schedules whether or not it
	// armed any.
	if err := d.purgeRemoved(ctx, in.RunID, nil, true, true, nil); err != nil {
		return "", err
	}
	log.Info("dispatcher: removal finished after a redelivery")
	return outcomeRemoved, nil
}

// refuseRemoved terminates an input of a removed run with the
// tombstone's reason ("run X removed by retention at T ..."), logged at
// most once a second like inputs of unknown runs.
func (d *Dispatcher) refuseRemoved(m jetstream.Msg, err error, log *slog.Logger) {
	reason := err.Error()
	if re, ok := removedRun(err); ok {
		reason = re.Error()
	}
	if d.unknownLog.allow(d.cfg.Clock.Now()) {
		log.Warn("dispatcher: input for a removed run terminated", slog.String("reason", reason),
			slog.Int("suppressed_since_last", d.unknownLog.takeSuppressed()))
	}
	_ = m.TermWithReason(truncate(reason, 256))
}

// sweepRun is the retention sweep's step for one run (bulk.Config.Sweep,
// `jetflow retention sweep`): a settled run whose removal was never
// scheduled (it settled before retention existed, or before its
// workflow's retention was lowered) gets what its settlement would have
// published now: its due entry (or its removal schedule), at its
// settlement plus its retention, or in the next buckets when that has
// passed. A run that has one already gets a second, which finds the run
// removed (and only purges) or kept; an unsettled or removed run, or one
// whose retention is off, gets nothing.
func (d *Dispatcher) sweepRun(ctx context.Context, runID string) error {
	if !d.ret.on {
		return fmt.Errorf("run %s not swept: this dispatcher cannot remove runs (%w); another dispatcher will", runID, kvstore.ErrNoKeyTTL)
	}
	c, found, err := d.load(ctx, runID, true, false)
	if _, removed := removedRun(err); removed || err == nil && !found {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sweep run %s: %w", runID, err)
	}
	out, bucket := d.removals(ctx, runID, c)
	if len(out) == 0 {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	defer cancel()
	if err := d.pub.publish(pctx, out); err != nil {
		return fmt.Errorf("sweep run %s: %w", runID, err)
	}
	if bucket != 0 {
		d.markScheduled(bucket)
	}
	return nil
}

// lastApplied is the stream sequence of the last input the record
// applied, 0 when none.
func lastApplied(rec *runrecord.Record) uint64 {
	if n := len(rec.Applied); n > 0 {
		return rec.Applied[n-1]
	}
	return 0
}
