package dispatcher

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// setupPartitions is setup with an input stream of p partitions.
func setupPartitions(t testing.TB, p int) *bundle {
	t.Helper()
	srv := natstest.Server(t)
	nc := natstest.Conn(t, srv)
	js := natstest.JetStream(t, nc)
	b := &bundle{srv: srv, nc: nc, js: js, names: subjects.Must(""), loader: &fakeLoader{prog: &fakeProgram{}}}
	b.provision(t, provision.ProvisionOptions{Partitions: p})
	return b
}

// Parking and waking more runs at once than a dispatcher steps within
// AckWait, nothing is delivered twice: the dispatcher takes in only the
// starts it steps in about a quarter of AckWait, and keeps alive the
// events of runs it no longer caches (the stray lane, which takes in up
// to MaxAckPending) while they wait their turn. Each step is slowed to
// 10 ms on two goroutines, as on a loaded machine (at most 200 steps a
// second: 3,000 take 15 s, past AckWait); the partitions' consumers keep
// the whole MaxAckPending, so only the dispatcher's own bound holds.
func TestParkingAndWakingManyRunsRedeliversNothing(t *testing.T) {
	t.Parallel()
	b := setupPartitions(t, 2)
	const n = 3000
	cfg := Config{Concurrency: 2, AckWait: 10 * time.Second, CacheSize: 16}
	cfg.hooks = &hooks{at: func(p hookPoint, _, _ string) error {
		if p == hookAfterSave {
			time.Sleep(10 * time.Millisecond) // a slow step, not a wait
		}
		return nil
	}}
	d := b.dispatcher(t, cfg)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("parked-%d", i)
		b.publishAsync(t, b.names.Start(ids[i]), wire.Start{Workflow: "fake", Input: json.RawMessage(`{"events":1}`)})
	}
	for _, id := range ids {
		b.waitStatus(t, id, wire.StatusWaiting, 3*time.Minute)
	}
	for _, id := range ids {
		b.publishAsync(t, b.names.Event(id, "wake"), "up")
	}
	for _, id := range ids {
		b.waitStatus(t, id, wire.StatusDone, 3*time.Minute)
	}
	peak, top, kept := d.inHand()
	t.Logf("ready lane: at most %d inputs in hand, bound at most %d; stray lane %d; %d kept past half an AckWait",
		peak[laneReady], top[laneReady], peak[laneStray], kept)
	if got := testutil.ToFloat64(d.m.redelivery); got != 0 {
		t.Errorf("%.0f inputs delivered again while %d runs parked and woke: they waited in the dispatcher's hands past AckWait", got, n)
	}
	if peak[laneReady] >= n {
		t.Errorf("the ready lane held all %d starts at once: nothing bounds what the dispatcher takes in", n)
	}
}

// A flood of inputs for runs that do not exist, all in one partition,
// never takes the places of the inputs of the runs the dispatcher works
// on: runs started after the flood, in its partition and in another, are
// done while most of the flood still waits to be terminated (bounded by
// the flood's progress, not by time). No input is delivered twice.
func TestStrayFloodInOnePartitionTakesNoPlaceOfOtherRuns(t *testing.T) {
	t.Parallel()
	b := setupPartitions(t, 2)
	const flood = 3000
	partition := func(id string) int { return subjects.Partition(id, b.partitions()) }
	var same, other string
	for i := 0; same == "" || other == ""; i++ {
		id := fmt.Sprintf("good-%d", i)
		switch {
		case partition(id) == partition("ghost-0") && same == "":
			same = id
		case partition(id) != partition("ghost-0") && other == "":
			other = id
		}
	}
	var terminated atomic.Int64
	sub, err := b.nc.Subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED."+b.names.InputStream()+".>", func(*nats.Msg) { terminated.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}

	// A stray judged in a batch costs a few microseconds; made slower
	// than a good run's steps, the flood shows whether a good run waits
	// for it.
	d := b.dispatcher(t, Config{Concurrency: 2, AckWait: 6 * time.Second, hooks: &hooks{stray: func() { time.Sleep(5 * time.Millisecond) }}})
	published := 0
	for i := 0; published < flood; i++ {
		id := fmt.Sprintf("ghost-%d", i)
		if partition(id) != partition("ghost-0") {
			continue
		}
		b.publishAsync(t, b.names.Event(id, "payment"), map[string]any{"amount": 9})
		published++
	}
	b.start(t, same, map[string]any{"done": true})
	b.start(t, other, map[string]any{"done": true})
	b.waitStatus(t, other, wire.StatusDone, 3*time.Minute)
	if n := terminated.Load(); n >= flood/2 {
		t.Errorf("run %s, in another partition, done only after %d of %d stray inputs were terminated", other, n, flood)
	} else {
		t.Logf("run %s, in another partition, done with %d of %d stray inputs terminated", other, n, flood)
	}
	b.waitStatus(t, same, wire.StatusDone, 3*time.Minute)
	if n := terminated.Load(); n >= flood/2 {
		t.Errorf("run %s, behind the flood in its partition, done only after %d of %d stray inputs were terminated: it waited for the flood", same, n, flood)
	} else {
		t.Logf("run %s, behind the flood in its partition, done with %d of %d stray inputs terminated", same, n, flood)
	}
	natstest.WaitFor(t, 3*time.Minute, "every stray input terminated", func() error {
		if n := terminated.Load(); n < flood {
			return fmt.Errorf("%d of %d terminated", n, flood)
		}
		return nil
	})
	if got := testutil.ToFloat64(d.m.redelivery); got != 0 {
		t.Errorf("%.0f inputs delivered again: the flood waited in the dispatcher's hands past AckWait", got)
	}
}
