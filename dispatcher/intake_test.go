package dispatcher

import (
	"context"
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
func setupPartitions(t *testing.T, p int) *bundle {
	t.Helper()
	srv := natstest.Server(t)
	nc := natstest.Conn(t, srv)
	js := natstest.JetStream(t, nc)
	b := &bundle{srv: srv, nc: nc, js: js, names: subjects.Must(""), loader: &fakeLoader{prog: &fakeProgram{}}}
	b.provision(t, provision.ProvisionOptions{Partitions: p})
	return b
}

// parkMany starts n runs that each wait for one event, published without
// waiting for each acknowledgement, under a dispatcher that then stops.
func (b *bundle) parkMany(t *testing.T, prefix string, n int) []string {
	t.Helper()
	parker := b.dispatcher(t, Config{})
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%d", prefix, i)
		b.publishAsync(t, b.names.Start(ids[i]), wire.Start{Workflow: "fake", Input: json.RawMessage(`{"events":1}`)})
	}
	for _, id := range ids {
		b.waitStatus(t, id, wire.StatusWaiting, 2*time.Minute)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := parker.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	return ids
}

// Waking more parked runs at once than a dispatcher steps within
// AckWait, it takes in only what it steps in about half of it, so that
// no input waits in its hands until the server delivers it again: every
// event is delivered once. Each event's step is slowed to a few
// milliseconds, as on a loaded machine; the partitions' consumers keep
// the whole MaxAckPending, so only the dispatcher's own bound holds.
func TestWakingManyParkedRunsRedeliversNothing(t *testing.T) {
	t.Parallel()
	b := setupPartitions(t, 2)
	const n = 3000
	ids := b.parkMany(t, "parked", n)

	// At most 200 steps a second: stepping them all takes 15 s or more,
	// beyond AckWait.
	cfg := Config{Concurrency: 2, AckWait: 10 * time.Second}
	cfg.hooks = &hooks{at: func(p hookPoint, _, kind string) error {
		if p == hookAfterSave && kind == subjects.KindEvent {
			time.Sleep(10 * time.Millisecond) // a slow step, not a wait
		}
		return nil
	}}
	d := b.dispatcher(t, cfg)
	for _, id := range ids {
		b.publishAsync(t, b.names.Event(id, "wake"), "up")
	}
	for _, id := range ids {
		b.waitStatus(t, id, wire.StatusDone, 3*time.Minute)
	}
	peak, top, kept := d.inHand()
	t.Logf("stray lane: at most %d inputs in hand, bound at most %d; ready lane %d, %d; %d kept past half an AckWait",
		peak[laneStray], top[laneStray], peak[laneReady], top[laneReady], kept)
	if got := testutil.ToFloat64(d.m.redelivery); got != 0 {
		t.Errorf("%.0f inputs delivered again while %d parked runs woke: the dispatcher took in more than it stepped within AckWait", got, n)
	}
	if peak[laneStray] > top[laneStray] || peak[laneStray] >= n {
		t.Errorf("the stray lane held %d inputs at once, over its bound %d (or all %d)", peak[laneStray], top[laneStray], n)
	}
}

// A flood of inputs for runs that do not exist, all in one partition,
// never takes the places of the inputs of the runs the dispatcher works
// on: a run started in another partition after the flood is done while
// most of the flood still waits to be terminated (bounded by the flood's
// progress, not by time), and one started behind it in its partition is
// done once the flood ahead of it is taken in. No input is delivered
// twice: the flood waits in the stream, not in the dispatcher's hands.
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

	d := b.dispatcher(t, Config{Concurrency: 2, AckWait: 6 * time.Second})
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
	t.Logf("run %s, behind the flood in its partition, done with %d of %d stray inputs terminated", same, terminated.Load(), flood)
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
