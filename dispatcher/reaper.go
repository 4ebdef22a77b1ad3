package dispatcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/clock"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// Batched removal (docs/ARCHITECTURE.md, "Retention"). A removal of its
// own per run (a fire, a delivery, a read, a tombstone, two purges, an
// ack) cost about as much as a one-task run. Instead, the settling flush
// publishes a plain due entry in the timer stream under the bucket of its
// due time, and the bucket's one schedule (published once per bucket by
// each dispatcher) fires at the bucket's end onto the reaper consumer.
// The dispatcher it reaches reads the bucket's entries and removes each
// run: a tombstone by compare-and-swap at the revision the entry names
// (no read unless the record changed since), the purge of its history
// and, only if it armed timers, of its schedules; then it purges the
// bucket's entries and acknowledges the fire. A crash leaves the fire
// unacknowledged: its redelivery does the bucket again, finding
// tombstones (only purging again) where runs were removed.

// reapWorkers is how many runs of a bucket one dispatcher removes at
// once: purges and tombstones are round trips, not CPU.
const reapWorkers = 16

// reapFetch is how many due entries are read per request.
const reapFetch = 512

// reaper is the state of batched removal in one dispatcher.
type reaper struct {
	mu sync.Mutex
	// scheduled are the buckets whose schedule this process published.
	scheduled map[int64]bool
	// archive is the archive bucket, bound on first use.
	archive *kvstore.ArchiveStore
	// it is the bound consumer's iterator (under mu: bound in the
	// background).
	it     jetstream.MessagesContext
	cancel context.CancelFunc
	done   chan struct{}
}

// startReaper consumes bucket fires in the background; false when the
// timer stream has no reap subjects (provisioned before batched removal:
// removals then go run by run). The reaper consumer is created in the
// background, retried until it is: a dispatcher restarted while the
// cluster elects leaders must not give up batching for its whole life
// (the due entries it publishes meanwhile are taken by the others).
func (d *Dispatcher) startReaper(timers jetstream.Stream) bool {
	names := d.cfg.Names
	if !slices.Contains(timers.CachedInfo().Config.Subjects, names.ReapAll()) {
		d.log.Warn("dispatcher: the timer stream has no subjects for batched removal (provision it again: jetflow dispatcher --provision); settled runs are removed one by one, at a higher cost",
			slog.String("stream", names.TimerStream()))
		return false
	}
	// Stop cuts a bucket short: its fire, unacknowledged, comes back.
	rctx, cancel := context.WithCancel(d.ctx)
	d.reap.cancel, d.reap.done = cancel, make(chan struct{})
	go func() {
		defer close(d.reap.done)
		it, err := d.bindReaper(rctx)
		if err != nil {
			return // stopped before the consumer was bound
		}
		for {
			m, err := it.Next()
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return
			}
			if err != nil {
				d.log.Warn("dispatcher: reaper", slog.Any("error", err))
				continue
			}
			d.reapBucket(rctx, m)
		}
	}()
	return true
}

// bindReaper creates the reaper consumer and starts consuming it,
// retrying until it succeeds or ctx ends.
func (d *Dispatcher) bindReaper(ctx context.Context) (jetstream.MessagesContext, error) {
	var it jetstream.MessagesContext
	op := func() error {
		cctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
		defer cancel()
		cons, err := d.js.CreateOrUpdateConsumer(cctx, d.cfg.Names.TimerStream(), provision.ReaperConsumerConfig(d.cfg.Names, d.cfg.AckWait))
		if err != nil {
			return fmt.Errorf("create the reaper consumer: %w", err)
		}
		if it, err = cons.Messages(jetstream.PullMaxMessages(1), jetstream.PullExpiry(provision.PullExpiry), jetstream.PullHeartbeat(provision.PullHeartbeat)); err != nil {
			return fmt.Errorf("consume bucket fires: %w", err)
		}
		return nil
	}
	b := backoff.WithContext(backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(250*time.Millisecond), backoff.WithMaxInterval(30*time.Second), backoff.WithMaxElapsedTime(0)), ctx)
	notify := func(err error, next time.Duration) {
		d.log.Warn("dispatcher: the reaper consumer is not bound yet; other dispatchers take the bucket fires meanwhile",
			slog.Any("error", err), slog.Duration("retry_in", next))
	}
	if err := backoff.RetryNotifyWithTimer(op, b, notify, &clock.RetryTimer{Clock: d.cfg.Clock}); err != nil {
		return nil, err
	}
	d.reap.mu.Lock()
	defer d.reap.mu.Unlock()
	if err := ctx.Err(); err != nil {
		it.Stop()
		return nil, err
	}
	d.reap.it = it
	return it, nil
}

// stopReaper stops taking bucket fires and waits for the bucket in hand.
func (d *Dispatcher) stopReaper() {
	if d.reap.done == nil {
		return
	}
	// Cancelled first: bindReaper, under the lock, then binds nothing.
	d.reap.cancel()
	d.reap.mu.Lock()
	if d.reap.it != nil {
		d.reap.it.Stop()
		d.reap.it = nil
	}
	d.reap.mu.Unlock()
	<-d.reap.done
	d.reap.done = nil
}

// bucketOf is the bucket (the Unix second it ends) that removes a run
// due at due: never one that ends within two widths from now, so that
// its schedule has not fired (or been skipped as fired) by the time the
// entry is stored, even with some clock skew.
func (d *Dispatcher) bucketOf(due time.Time) int64 {
	w := d.cfg.RemovalBucket
	if soon := d.cfg.Clock.Now().Add(2 * w); due.Before(soon) {
		due = soon
	}
	return due.Truncate(w).Add(w).Unix()
}

// dueEntry is what the settling flush publishes for batched removal: the
// due entry and, unless this process already did, its bucket's schedule.
// bucket is to be marked scheduled once they are stored.
func (d *Dispatcher) dueEntry(runID string, due wire.Due, at time.Time) (out []runrecord.Outgoing, bucket int64, err error) {
	data, err := json.Marshal(due)
	if err != nil {
		return nil, 0, err
	}
	names := d.cfg.Names
	bucket = d.bucketOf(at)
	out = append(out, runrecord.Outgoing{
		// One entry per settlement; a repeat within the duplicate window
		// stores nothing (a later one, in a later bucket, finds the run
		// removed and only purges).
		ID: runID + "/due/" + strconv.FormatFloat(due.Settled, 'f', -1, 64), Kind: runrecord.OutTimer,
		Subject: names.ReapDue(bucket, runID), Data: data,
		Header: map[string]string{wire.HeaderRunID: runID},
	})
	d.reap.mu.Lock()
	known := d.reap.scheduled[bucket]
	d.reap.mu.Unlock()
	if !known {
		end := time.Unix(bucket, 0).UTC()
		out = append(out, runrecord.Outgoing{
			// No message id: dispatchers settling runs into one bucket at
			// once publish it together, and the server refuses a message
			// id still in process (10158) on a cluster; an identical
			// schedule replacing itself is harmless.
			Kind:    runrecord.OutTimer,
			Subject: names.ReapSchedule(bucket),
			Header: map[string]string{
				wire.HeaderSchedule:       "@at " + end.Format(time.RFC3339),
				wire.HeaderScheduleTarget: names.ReapFire(bucket),
				wire.HeaderScheduleTTL:    wire.FiredTimerTTLValue,
			},
		})
	}
	return out, bucket, nil
}

// markScheduled notes that bucket's schedule is stored, and forgets
// buckets that have ended.
func (d *Dispatcher) markScheduled(bucket int64) {
	now := d.cfg.Clock.Now().Unix()
	d.reap.mu.Lock()
	defer d.reap.mu.Unlock()
	if d.reap.scheduled[bucket] {
		return
	}
	if d.reap.scheduled == nil {
		d.reap.scheduled = map[int64]bool{}
	}
	for b := range d.reap.scheduled {
		if b < now {
			delete(d.reap.scheduled, b)
		}
	}
	d.reap.scheduled[bucket] = true
}

// reapBucket removes the runs of the bucket m fired for, then purges its
// entries and acknowledges m; on a failure it hands m back for later.
func (d *Dispatcher) reapBucket(ctx context.Context, m jetstream.Msg) {
	if d.crashed.Load() {
		return // a test's simulated crash: as if killed
	}
	names := d.cfg.Names
	bucket, err := names.ParseReapFire(m.Subject())
	if err != nil {
		_ = m.TermWithReason(truncate(err.Error(), 256))
		return
	}
	log := d.log.With(slog.Int64("bucket", bucket))
	// Keep the fire ours while we work: a bucket may hold many runs.
	stop := make(chan struct{})
	var beat sync.WaitGroup
	beat.Go(func() {
		every := max(d.cfg.AckWait/3, time.Second)
		t := d.cfg.Clock.NewTimer(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C():
				_ = m.InProgress()
				t.Reset(every)
			}
		}
	})
	removed, read, err := d.reapEntries(ctx, bucket, log)
	close(stop)
	beat.Wait()
	if err == nil {
		err = d.hook(hookAfterReapRead, &step.Input{Kind: subjects.KindExpire})
	}
	if err == nil {
		err = d.purgeReaped(ctx, bucket, read)
	}
	if errors.Is(err, errCrash) {
		d.crashed.Store(true)
		return
	}
	if err != nil {
		d.m.removalFailures.Inc()
		log.Warn("dispatcher: bucket of removals not finished; retried", slog.Int("removed", removed), slog.Any("error", err))
		_ = m.NakWithDelay(d.cfg.RetryDelay)
		return
	}
	_ = m.Ack()
	// The fire itself would stay for its TTL (days): one per bucket.
	pctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	if err := d.timers.Purge(pctx, jetstream.WithPurgeSubject(names.ReapFire(bucket))); err != nil {
		log.Info("dispatcher: bucket fire left to its TTL", slog.Any("error", err))
	}
	cancel()
	if removed > 0 {
		log.Info("dispatcher: runs removed by retention", slog.Int("removed", removed))
	}
}

// purgeReaped purges the bucket's due entries up to the last one read
// (read, a stream sequence), and fails when any is left: one stored
// after the read, or one the read missed (a fetch that timed out under
// load ends a read early). Purging them all, as it once did, lost such
// an entry's run for good: its bucket was done, and nothing else would
// remove it. The fire then comes back and reads again.
func (d *Dispatcher) purgeReaped(ctx context.Context, bucket int64, read uint64) error {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	defer cancel()
	filter := d.cfg.Names.ReapDueIn(bucket)
	if read > 0 {
		if err := d.timers.Purge(ctx, jetstream.WithPurgeSubject(filter), jetstream.WithPurgeSequence(read+1)); err != nil {
			return err
		}
	}
	left, _, err := kvstore.SubjectCounts(ctx, d.js, d.cfg.Names.TimerStream(), filter, 0)
	if err != nil {
		return err
	}
	if n := len(left); n > 0 {
		return fmt.Errorf("%d due entries of bucket %d were not read (stored after the read, or missed by it)", n, bucket)
	}
	return nil
}

// reapEntries reads the bucket's due entries and removes their runs,
// reapWorkers at a time; it returns how many it removed, the stream
// sequence of the last entry it read, and the first error.
func (d *Dispatcher) reapEntries(ctx context.Context, bucket int64, log *slog.Logger) (int, uint64, error) {
	oc, err := d.js.OrderedConsumer(ctx, d.cfg.Names.TimerStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{d.cfg.Names.ReapDueIn(bucket)},
		// Gone soon after the bucket is done, however it ends.
		InactiveThreshold: 30 * time.Second,
	})
	if err != nil {
		return 0, 0, fmt.Errorf("read the due entries of bucket %d: %w", bucket, err)
	}
	at := float64(d.cfg.Clock.Now().UnixMilli())
	var (
		mu      sync.Mutex
		removed int
		errs    []error
	)
	type job struct {
		due      wire.Due
		last     *jetstream.RawStreamMsg
		payloads *payloadListing
	}
	work := make(chan job)
	var wg sync.WaitGroup
	for range reapWorkers {
		wg.Go(func() {
			for j := range work {
				ok, err := d.removeDue(ctx, j.due, j.last, j.payloads, at, log)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else if ok {
					removed++
				}
				mu.Unlock()
			}
		})
	}
	read, err := d.eachDue(ctx, oc, func(dues []wire.Due) error {
		// The runs' latest redrives and resets, for the whole batch at
		// once (revival.go).
		runs := make([]string, len(dues))
		for i, due := range dues {
			runs[i] = due.Run
		}
		last, err := d.revivals(ctx, runs)
		if err != nil {
			return err
		}
		// Their payload objects, for the whole batch too.
		pl, err := d.listPayloads(ctx)
		if err != nil {
			return err
		}
		for _, due := range dues {
			work <- job{due, last[due.Run], pl}
		}
		return nil
	})
	close(work)
	wg.Wait()
	return removed, read, errors.Join(append(errs, err)...)
}

// eachDue calls f with the entries of each batch oc delivers until none
// is pending, and stops at f's first error. It returns the stream
// sequence of the last entry f was called with.
func (d *Dispatcher) eachDue(ctx context.Context, oc jetstream.Consumer, f func([]wire.Due) error) (uint64, error) {
	dues := make([]wire.Due, 0, reapFetch)
	var read uint64
	for {
		// No wait: the entries are stored; a batch ends with what there is.
		batch, err := oc.FetchNoWait(reapFetch)
		if err != nil {
			return read, err
		}
		var last uint64
		n, pending := 0, uint64(0)
		dues = dues[:0]
		for m := range batch.Messages() {
			n++
			if meta, err := m.Metadata(); err == nil {
				pending, last = meta.NumPending, meta.Sequence.Stream
			}
			var due wire.Due
			if err := json.Unmarshal(m.Data(), &due); err != nil || due.Run == "" {
				d.log.Warn("dispatcher: malformed due entry skipped", slog.String("subject", m.Subject()), slog.Any("error", err))
				continue
			}
			dues = append(dues, due)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return read, err
		}
		if len(dues) > 0 {
			if err := f(dues); err != nil {
				return read, err
			}
		}
		read = max(read, last)
		if n == 0 || pending == 0 || ctx.Err() != nil {
			return read, ctx.Err()
		}
	}
}

// removeDue removes the run of one due entry, whose latest redrive or
// reset is last (nil: none) and whose payload objects pl lists: false
// when there is nothing to remove (it was removed, or revived or settled
// again since) or its removal was deferred.
func (d *Dispatcher) removeDue(ctx context.Context, due wire.Due, last *jetstream.RawStreamMsg, pl *payloadListing, at float64, log *slog.Logger) (bool, error) {
	ts, ok := d.store.(tombstoner)
	if !ok {
		return false, kvstore.ErrNoKeyTTL
	}
	life := max(time.Duration(due.Retention)*time.Millisecond, step.MinTombstone)
	r := wire.Removed{
		Run: due.Run, At: at, Workflow: due.Workflow, Revision: due.Revision,
		Status: due.Status, Settled: due.Settled, Until: at + float64(life.Milliseconds()),
		HistoryKept: d.ret.keepHistory,
	}
	data, err := runrecord.EncodeRemoved(r)
	if err != nil {
		return false, err
	}
	if later, err := d.deferRemoval(ctx, due, last, log); later || err != nil {
		return false, err
	}
	if later, err := d.deferChild(ctx, due, log); later || err != nil {
		return false, err
	}
	rev, timers, inputs := due.Rev, due.Timers, due.Inputs
	var rec *runrecord.Record
	if due.Archive {
		// The archive needs the record and the history: read them, judge
		// the record, archive, then the tombstone at the revision read.
		c, ok, err := d.current(ctx, due, log)
		if !ok || err != nil {
			return false, err
		}
		rev, timers, r.Archived, rec, inputs = c.rev, c.rec.SweepsTimers(), true, c.rec, d.inputsOf(c)
		if err := d.archiveRun(ctx, r, c.rec); err != nil {
			return false, err
		}
		if data, err = runrecord.EncodeRemoved(r); err != nil {
			return false, err
		}
	}
	if rec == nil && d.ret.keepHistory && d.pg.writing(d.cfg.Clock.Now()) {
		// The record names the inputs the run's pages do not: read it
		// before the tombstone replaces it (only where history is kept).
		if c, found, err := d.load(ctx, due.Run, false, false); err == nil && found {
			rec = c.rec
		}
	}
	d.finalPage(ctx, due.Run, rec, log)
	for attempt := 0; ; attempt++ {
		wctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
		_, err = ts.Tombstone(wctx, due.Run, data, rev, life)
		cancel()
		if !errors.Is(err, kvstore.ErrStale) || attempt == 1 || due.Archive {
			break
		}
		// The record changed since the entry: read it and judge again.
		c, ok, err := d.current(ctx, due, log)
		if !ok || err != nil {
			return false, err
		}
		rev, timers, inputs = c.rev, c.rec.SweepsTimers(), d.inputsOf(c)
	}
	if err != nil {
		return false, fmt.Errorf("remove run %s: %w", due.Run, err)
	}
	d.cache.drop(due.Run)
	if d.cfg.OnRemoved != nil {
		d.cfg.OnRemoved(r)
	}
	if d.crashed.Load() {
		return false, errCrash
	}
	if err := d.hook(hookAfterTombstone, &step.Input{RunID: due.Run, Kind: subjects.KindExpire}); err != nil {
		return false, err
	}
	if err := d.purgeRemoved(ctx, due.Run, inputs, timers, timers, pl); err != nil {
		return false, err
	}
	d.m.removed.WithLabelValues(r.Status).Inc()
	log.Debug("dispatcher: run removed by retention", slog.String("run_id", due.Run), slog.String("status", r.Status))
	return true, nil
}

// current reads the run of a due entry and judges it: false when there
// is nothing to remove (no record; kept, being revived or settled again
// since). A run removed before (a bucket done again after a crash) has
// its purges done again, and false.
func (d *Dispatcher) current(ctx context.Context, due wire.Due, log *slog.Logger) (cached, bool, error) {
	c, found, err := d.load(ctx, due.Run, true, false)
	if _, removed := removedRun(err); removed {
		return cached{}, false, d.purgeRemoved(ctx, due.Run, nil, true, true, nil)
	}
	if err != nil || !found {
		return cached{}, false, err
	}
	if why := step.Removable(due.Run, c.rec, due.Settled); why != nil {
		log.Debug("dispatcher: run kept by retention", slog.String("run_id", due.Run), slog.String("reason", why.Error()))
		return cached{}, false, nil
	}
	return c, true, nil
}

// archiveRun writes the run's record and whole history to the archive
// before its tombstone. A crash after it leaves the record in place; the
// bucket done again writes the archive again.
func (d *Dispatcher) archiveRun(ctx context.Context, r wire.Removed, rec *runrecord.Record) error {
	d.reap.mu.Lock()
	store := d.reap.archive
	d.reap.mu.Unlock()
	if store == nil {
		s, err := kvstore.OpenArchive(ctx, d.js, d.cfg.Names)
		if err != nil {
			return fmt.Errorf("archive run %s before removing it (provision the archive: jetflow dispatcher --provision): %w", r.Run, err)
		}
		d.reap.mu.Lock()
		d.reap.archive, store = s, s
		d.reap.mu.Unlock()
	}
	record, err := rec.Encode()
	if err != nil {
		return fmt.Errorf("archive run %s: encode its record: %w", r.Run, err)
	}
	msgs, err := replay.ReadHistoryOf(ctx, d.js, d.cfg.Names, r.Run, rec)
	if err != nil {
		return fmt.Errorf("archive run %s: read its history: %w", r.Run, err)
	}
	ar := &wire.Archived{Removed: r, Record: record, History: make([]wire.ArchivedInput, 0, len(msgs))}
	for _, m := range msgs {
		ar.History = append(ar.History, wire.ArchivedInput{Seq: m.Seq, Time: m.Time, Subject: m.Subject, Header: m.Header, Data: m.Data})
	}
	wctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	defer cancel()
	return store.Put(wctx, ar)
}

// inputGrace is how long after an input of a settled run was stored its
// removal waits for it: an input held by a dispatcher that died comes
// back after the consumer's AckWait.
func inputGrace(ackWait time.Duration) time.Duration { return 2 * ackWait }

// deferRemoval moves the removal of a run to a later bucket when last,
// its latest redrive or reset, was stored after the input that settled
// it, within inputGrace (lateRevival): taken, it revives the run (whose
// next settlement schedules its own removal) or is refused, and the
// later bucket judges the run again. It reports whether it deferred.
func (d *Dispatcher) deferRemoval(ctx context.Context, due wire.Due, last *jetstream.RawStreamMsg, log *slog.Logger) (bool, error) {
	until, later := d.lateRevival(last, due.Seq, due.Settled)
	if !later {
		return false, nil
	}
	out, bucket, err := d.dueEntry(due.Run, due, until)
	if err != nil {
		return false, err
	}
	// Its own id: the entry it replaces has the settlement's.
	out[0].ID += "/" + strconv.FormatInt(bucket, 10)
	pctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	err = d.pub.publish(pctx, out)
	cancel()
	if err != nil {
		return false, fmt.Errorf("defer the removal of run %s: %w", due.Run, err)
	}
	d.markScheduled(bucket)
	log.Info("dispatcher: removal deferred: a redrive or reset of the run came after its settlement", slog.String("run_id", due.Run),
		slog.Uint64("input_seq", last.Sequence), slog.Time("until", until))
	return true, nil
}
