package dispatcher

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/payload"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// settleOne starts run id of "forever" and ends it; it returns the
// settlement's time.
func (b *bundle) settleOne(t *testing.T, id string) float64 {
	t.Helper()
	b.publish(t, b.names.Start(id), wire.Start{Workflow: "forever"}, "start/"+id)
	b.waitStatus(t, id, wire.StatusWaiting, 10*time.Second)
	b.publish(t, b.names.Event(id, "x"), nil, "")
	return b.waitStatus(t, id, wire.StatusDone, 10*time.Second).Status.Time
}

// withoutReapSubjects makes the timer stream one provisioned before
// batched removal: removals then go run by run.
func (b *bundle) withoutReapSubjects(t *testing.T) {
	t.Helper()
	ts, err := b.js.Stream(testCtx(t), b.names.TimerStream())
	if err != nil {
		t.Fatal(err)
	}
	cfg := ts.CachedInfo().Config
	cfg.Subjects = slices.DeleteFunc(cfg.Subjects, func(s string) bool { return s == b.names.ReapAll() })
	if _, err := b.js.UpdateStream(testCtx(t), cfg); err != nil {
		t.Fatal(err)
	}
}

// TestReaperBindsOnceItCan: a dispatcher that cannot create the reaper
// consumer when it starts (here a consumer of that name whose ack policy
// cannot be changed; in the field, a cluster electing leaders) still
// batches its removals and binds the consumer as soon as it can, instead
// of removing runs one by one for the rest of its life.
func TestReaperBindsOnceItCan(t *testing.T) {
	t.Parallel()
	b := setup(t).withEngine(t, map[string]string{"forever": waitsForever})
	blocker := provision.ReaperConsumerConfig(b.names, time.Second)
	blocker.AckPolicy = jetstream.AckNonePolicy
	if _, err := b.js.CreateConsumer(testCtx(t), b.names.TimerStream(), blocker); err != nil {
		t.Fatal(err)
	}
	d := b.dispatcher(t, Config{Retention: time.Second, RemovalBucket: time.Second})
	if !d.ret.batched {
		t.Fatal("removals not batched although the timer stream has the reap subjects")
	}
	settled := b.settleOne(t, "late")
	if err := b.js.DeleteConsumer(testCtx(t), b.names.TimerStream(), blocker.Durable); err != nil {
		t.Fatal(err)
	}
	r := b.tombstone(t, "late", 30*time.Second)
	if r.Status != wire.StatusDone || r.Settled != settled {
		t.Errorf("tombstone %+v (settled at %v)", r, settled)
	}
	// Removed by the bucket's fire through the consumer the dispatcher
	// bound once it could, not by a removal input of its own. The purge
	// follows the tombstone, so wait for it.
	natstest.WaitFor(t, 30*time.Second, "the removed run's history purged", func() error {
		if n := b.historyOf(t, "late"); n != 0 {
			return errorf("%d messages", n)
		}
		return nil
	})
	c, err := b.js.Consumer(testCtx(t), b.names.TimerStream(), blocker.Durable)
	if err != nil {
		t.Fatal(err)
	}
	if info := c.CachedInfo(); info.Config.AckPolicy != jetstream.AckExplicitPolicy || info.Delivered.Consumer == 0 {
		t.Errorf("reaper consumer %+v delivered %+v; want the dispatcher's, having delivered the bucket's fire", info.Config, info.Delivered)
	}
}

// TestArchiveBeforeRemovalOneByOne: where removals go run by run (a
// timer stream provisioned before batched removal), a deployment that
// asks for the archive gets it as with batched removal.
func TestArchiveBeforeRemovalOneByOne(t *testing.T) {
	t.Parallel()
	b := setup(t).withEngine(t, map[string]string{"forever": waitsForever})
	b.withoutReapSubjects(t)
	d := b.dispatcher(t, Config{Retention: time.Second, RemovalBucket: time.Second, Archive: true})
	if d.ret.batched {
		t.Fatal("removals batched although the timer stream has no reap subjects")
	}
	settled := b.settleOne(t, "single")
	history := b.historyOf(t, "single")
	r := b.tombstone(t, "single", 20*time.Second)
	if !r.Archived || r.Status != wire.StatusDone || r.Settled != settled {
		t.Errorf("tombstone %+v (settled at %v)", r, settled)
	}
	store, err := kvstore.OpenArchive(testCtx(t), b.js, b.names)
	if err != nil {
		t.Fatal(err)
	}
	ar, err := store.Get(testCtx(t), "single")
	if err != nil {
		t.Fatalf("the run removed one by one was not archived: %v", err)
	}
	// The history and the removal's own input, which fired into it.
	if !ar.Removed.Archived || uint64(len(ar.History)) != history+1 || ar.History[0].Subject != b.storedOn(b.names.Start("single")) {
		t.Fatalf("archive: removed %+v, %d messages of history (the stream held %d)", ar.Removed, len(ar.History), history)
	}
	natstest.WaitFor(t, 10*time.Second, "the history purged", func() error {
		if n := b.historyOf(t, "single"); n != 0 {
			return errorf("%d messages", n)
		}
		return nil
	})
}

// lateRedrive publishes a redrive of run id (settled done, so the run
// refuses it) and returns it as stored.
func (b *bundle) lateRedrive(t *testing.T, id string) *jetstream.RawStreamMsg {
	t.Helper()
	data, err := json.Marshal(wire.Redrive{Reason: "late"})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := b.js.Publish(testCtx(t), b.names.Redrive(id), data)
	if err != nil {
		t.Fatal(err)
	}
	in, err := b.js.Stream(testCtx(t), b.names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	m, err := in.GetMsg(testCtx(t), ack.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRemovalWaitsForAnInputAfterTheSettlement: a redrive or reset of a
// settled run stored after its settlement (held by a dispatcher that
// died, in the field; here a redrive the done run refuses) defers the
// run's removal until inputGrace after it, so that the input is taken
// first; the run is removed then, not kept for ever.
func TestRemovalWaitsForAnInputAfterTheSettlement(t *testing.T) {
	t.Parallel()
	b := setup(t).withEngine(t, map[string]string{"forever": waitsForever})
	const ackWait = 3 * time.Second
	b.dispatcher(t, Config{Retention: time.Second, RemovalBucket: time.Second, AckWait: ackWait})
	settled := b.settleOne(t, "late-input")
	m := b.lateRedrive(t, "late-input")
	r := b.tombstone(t, "late-input", 30*time.Second)
	if r.Status != wire.StatusDone || r.Settled != settled {
		t.Errorf("tombstone %+v (settled at %v)", r, settled)
	}
	if grace := float64(m.Time.Add(inputGrace(ackWait)).UnixMilli()); r.At < grace {
		t.Errorf("removed at %v, before the grace after the late redrive (stored %v) ended at %v", r.At, m.Time.UnixMilli(), grace)
	}
}

// TestRemovalOneByOneWaitsForAnInputAfterTheSettlement: where removals go
// run by run (a timer stream provisioned before batched removal), a late
// redrive defers the removal input as it defers a bucket's entry.
func TestRemovalOneByOneWaitsForAnInputAfterTheSettlement(t *testing.T) {
	t.Parallel()
	b := setup(t).withEngine(t, map[string]string{"forever": waitsForever})
	b.withoutReapSubjects(t)
	// The removal fires after the retention, long enough for the redrive
	// to be stored before it even on a loaded machine; the grace after the
	// redrive (twice the ack wait) ends well after that.
	const retention, ackWait = 4 * time.Second, 10 * time.Second
	d := b.dispatcher(t, Config{Retention: retention, RemovalBucket: time.Second, AckWait: ackWait})
	if d.ret.batched {
		t.Fatal("removals batched although the timer stream has no reap subjects")
	}
	settled := b.settleOne(t, "late-single")
	m := b.lateRedrive(t, "late-single")
	deferred := d.m.messages.WithLabelValues(subjects.KindExpire, outcomeDeferred)
	natstest.WaitFor(t, time.Minute, "the removal input deferred", func() error {
		if n := testutil.ToFloat64(deferred); n < 1 {
			return errorf("%v removal inputs deferred", n)
		}
		return nil
	})
	// Handed back until the grace after the redrive ends: the run is
	// still there.
	data, _, err := b.store.Get(testCtx(t), "late-single")
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := runrecord.Decode(data); err != nil || rec.Status == nil || rec.Status.Status != wire.StatusDone {
		t.Fatalf("the run after its removal was deferred: %+v, %v", rec, err)
	}
	r := b.tombstone(t, "late-single", time.Minute)
	if r.Status != wire.StatusDone || r.Settled != settled {
		t.Errorf("tombstone %+v (settled at %v)", r, settled)
	}
	if grace := m.Time.Add(inputGrace(ackWait)); time.Now().Before(grace) {
		t.Errorf("removed before the grace after the late redrive (stored %v) ended at %v", m.Time, grace)
	}
}

// TestSweepRemovesRunsSettledBeforeRetention: runs that settled while
// retention was off have no removal scheduled, and stay; a retention
// sweep (the bulk job `jetflow retention sweep` submits, carried out by
// a dispatcher's job runner) schedules it, and they are removed. A
// waiting run is skipped by the sweep and kept.
func TestSweepRemovesRunsSettledBeforeRetention(t *testing.T) {
	t.Parallel()
	b := setup(t).withEngine(t, map[string]string{"forever": waitsForever})
	before := b.dispatcher(t, Config{Retention: -1})
	settled := map[string]float64{}
	for _, id := range []string{"old-1", "old-2"} {
		settled[id] = b.settleOne(t, id)
	}
	b.publish(t, b.names.Start("waiting"), wire.Start{Workflow: "forever"}, "start/waiting")
	b.waitStatus(t, "waiting", wire.StatusWaiting, 10*time.Second)
	if err := before.Stop(testCtx(t)); err != nil {
		t.Fatal(err)
	}

	b.dispatcher(t, Config{Retention: time.Second, RemovalBucket: time.Second})
	c, err := client.New(testCtx(t), b.js, client.Config{Names: b.names})
	if err != nil {
		t.Fatal(err)
	}
	j, err := c.SubmitJob(testCtx(t), client.JobSpec{Operation: client.OpRetentionSweep})
	if err != nil {
		t.Fatal(err)
	}
	done, err := c.WatchJob(testCtx(t), j.ID, func(*wire.Job) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if done.State != wire.JobDone || done.Matched != 3 || done.Sent != 2 || done.Skipped != 1 || done.Errors != 0 {
		t.Fatalf("sweep job %+v; want done, 3 matched, 2 swept, the waiting run skipped", done)
	}
	for id, at := range settled {
		if r := b.tombstone(t, id, 30*time.Second); r.Status != wire.StatusDone || r.Settled != at {
			t.Errorf("tombstone of %s: %+v (settled at %v)", id, r, at)
		}
	}
	if st := b.record(t, "waiting"); st == nil || st.Status == nil || st.Status.Status != wire.StatusWaiting {
		t.Errorf("the waiting run: %+v", st)
	}
}

// TestBatchedRemovalIsOnTimeAndKeepsWaitingRuns: of runs started
// together, the settled ones are removed no earlier than their retention
// and no later than the stated slack after it (docs/OPERATIONS.md: the
// bucket a run falls in ends at most one width after its due time, or
// three widths after it settled when its retention is shorter than two;
// then the bucket's fire reaches a dispatcher), with their history and
// payload objects; the waiting ones, as old and in the same buckets, are
// kept whole with theirs.
func TestBatchedRemovalIsOnTimeAndKeepsWaitingRuns(t *testing.T) {
	t.Parallel()
	const (
		retention = 2 * time.Second
		width     = time.Second
		// delivery bounds how long a bucket's fire takes to reach a
		// dispatcher and be started on, on a loaded machine under -race.
		delivery = 5 * time.Second
	)
	b := setup(t).withEngine(t, map[string]string{"forever": waitsForever})
	d := b.dispatcher(t, Config{Retention: retention, RemovalBucket: width})
	ctx := testCtx(t)
	// Its own client: what its puts leave running ends with the test.
	pjs := natstest.JetStream(t, natstest.Conn(t, b.srv))
	t.Cleanup(pjs.CleanupPublisher)
	ps, err := payload.Open(ctx, pjs, payload.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var settled, waiting []string
	settledAt := map[string]time.Time{}
	for i := range 16 {
		id := fmt.Sprintf("batch-%d", i)
		b.publish(t, b.names.Start(id), wire.Start{Workflow: "forever"}, "start/"+id)
		b.waitStatus(t, id, wire.StatusWaiting, 10*time.Second)
		if _, err := ps.Put(ctx, id+"/event/1", []byte("a body sent by reference")); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			settled = append(settled, id)
			b.publish(t, b.names.Event(id, "x"), nil, "")
			at := b.waitStatus(t, id, wire.StatusDone, 10*time.Second).Status.Time
			settledAt[id] = time.UnixMilli(int64(at))
		} else {
			waiting = append(waiting, id)
		}
	}
	objects := func() map[string]bool {
		t.Helper()
		byRun, err := ps.ByRun(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for run := range byRun {
			out[run] = true
		}
		return out
	}
	last := time.Time{}
	for _, id := range settled {
		r := b.tombstone(t, id, 30*time.Second)
		removedAt := time.UnixMilli(int64(r.At))
		bucketEnd := settledAt[id].Add(max(retention, 2*width)).Add(width)
		if removedAt.Before(settledAt[id].Add(retention)) || removedAt.After(bucketEnd.Add(delivery)) {
			t.Errorf("run %s settled at %s, removed at %s: want within [%s, %s]", id,
				settledAt[id].Format(time.StampMilli), removedAt.Format(time.StampMilli),
				settledAt[id].Add(retention).Format(time.StampMilli), bucketEnd.Add(delivery).Format(time.StampMilli))
		}
		if bucketEnd.After(last) {
			last = bucketEnd
		}
	}
	b.consumerSettled(t, 10*time.Second)
	natstest.WaitFor(t, 10*time.Second, "the settled runs' history and payloads removed", func() error {
		objs := objects()
		for _, id := range settled {
			if n := b.historyOf(t, id); n != 0 || objs[id] {
				return errorf("run %s: %d messages of history, payload left %v", id, n, objs[id])
			}
		}
		return nil
	})
	// Every bucket the waiting runs could have fallen in is done.
	<-time.After(time.Until(last.Add(2 * width)))
	objs := objects()
	for _, id := range waiting {
		rec := b.record(t, id)
		if rec.Status.Status != wire.StatusWaiting || b.historyOf(t, id) != 1 || !objs[id] {
			t.Errorf("waiting run %s: status %s, %d messages of history, payload kept %v", id, rec.Status.Status, b.historyOf(t, id), objs[id])
		}
	}
	if got := testutil.ToFloat64(d.m.removed.WithLabelValues(wire.StatusDone)); got != float64(len(settled)) {
		t.Errorf("runs_removed_total{status=done} = %v, want %d", got, len(settled))
	}
}

// TestDueEntryStoredAfterTheReadIsNotPurged: a due entry stored in a
// bucket after its reaping read the entries (or one the read missed) is
// not purged with those it read: the bucket is reaped again and removes
// its run. Purging the whole bucket lost such a run for good.
func TestDueEntryStoredAfterTheReadIsNotPurged(t *testing.T) {
	t.Parallel()
	b := setup(t).withEngine(t, map[string]string{"forever": waitsForever})
	ctx := testCtx(t)
	lateSettled := make(chan struct{})
	var once sync.Once
	copied := make(chan error, 1)
	// At the first bucket's reaping, once its entries are read: the late
	// run's entry, from its own later bucket, moves into this one.
	moveLate := func() error {
		<-lateSettled
		due, _, err := kvstore.SubjectCounts(ctx, b.js, b.names.TimerStream(), b.names.ReapDueAll(), 0)
		if err != nil {
			return err
		}
		var own string
		buckets := map[int64]bool{}
		for subj := range due {
			parts := strings.Split(subj, ".")
			n, err := strconv.ParseInt(parts[len(parts)-2], 10, 64)
			if err != nil {
				return err
			}
			if parts[len(parts)-1] == "late" {
				own = subj
			} else {
				buckets[n] = true
			}
		}
		if own == "" || len(buckets) != 1 {
			return fmt.Errorf("due entries %v: want the late run's and those of one bucket being reaped", due)
		}
		timers, err := b.js.Stream(ctx, b.names.TimerStream())
		if err != nil {
			return err
		}
		m, err := timers.GetLastMsgForSubject(ctx, own)
		if err != nil {
			return err
		}
		for bucket := range buckets {
			if _, err := b.js.Publish(ctx, b.names.ReapDue(bucket, "late"), m.Data); err != nil {
				return err
			}
		}
		return timers.Purge(ctx, jetstream.WithPurgeSubject(own))
	}
	cfg := Config{Retention: 4 * time.Second, RemovalBucket: time.Second, RetryDelay: 200 * time.Millisecond, hooks: &hooks{at: func(p hookPoint, _, _ string) error {
		if p == hookAfterReapRead {
			once.Do(func() { copied <- moveLate() })
		}
		return nil
	}}}
	b.dispatcher(t, cfg)
	for _, id := range []string{"first", "late"} {
		b.publish(t, b.names.Start(id), wire.Start{Workflow: "forever"}, "start/"+id)
		b.waitStatus(t, id, wire.StatusWaiting, 10*time.Second)
	}
	b.publish(t, b.names.Event("first", "x"), nil, "")
	b.waitStatus(t, "first", wire.StatusDone, 10*time.Second)
	time.Sleep(2 * time.Second) // a later bucket for the late run
	b.publish(t, b.names.Event("late", "x"), nil, "")
	b.waitStatus(t, "late", wire.StatusDone, 10*time.Second)
	close(lateSettled)
	b.tombstone(t, "first", 30*time.Second)
	select {
	case err := <-copied:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no bucket was reaped")
	}
	b.tombstone(t, "late", 30*time.Second)
}
