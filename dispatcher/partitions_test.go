package dispatcher

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/runindex"
	"github.com/jetflow/jetflow/wire"
)

func TestShare(t *testing.T) {
	t.Parallel()
	cases := []struct {
		self string
		ids  []string
		want []int
	}{
		{"a", []string{"a"}, []int{0, 1, 2, 3, 4}},
		{"a", []string{"b", "a"}, []int{0, 2, 4}},
		{"b", []string{"a", "b"}, []int{1, 3}},
		{"c", []string{"c", "a", "b"}, []int{2}},
		{"x", []string{"a"}, nil},
	}
	for _, c := range cases {
		if got := share(c.self, c.ids, 5); !slices.Equal(got, c.want) {
			t.Errorf("share(%s, %v, 5) = %v, want %v", c.self, c.ids, got, c.want)
		}
	}
}

// owners follows the dispatchers' heartbeats: who owns what now.
type owners struct {
	mu   sync.Mutex
	owns map[string][]int // member id -> partitions, leavers removed
}

func watchOwners(t *testing.T, b *bundle) *owners {
	t.Helper()
	o := &owners{owns: map[string][]int{}}
	sub, err := b.nc.Subscribe(b.names.DispatcherHeartbeats(), func(m *nats.Msg) {
		var hb wire.DispatcherHeartbeat
		if json.Unmarshal(m.Data, &hb) != nil {
			return
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		if hb.Leaving {
			delete(o.owns, hb.ID)
		} else {
			o.owns[hb.ID] = hb.Owns
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return o
}

// waitBalanced waits until exactly the members in want (by count) own
// every partition once between them, each about P/d.
func (o *owners) waitBalanced(t *testing.T, members int, forget ...string) {
	t.Helper()
	natstest.WaitFor(t, 2*time.Minute, fmt.Sprintf("%d dispatchers share the partitions", members), func() error {
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, id := range forget {
			delete(o.owns, id)
		}
		if len(o.owns) != members {
			return fmt.Errorf("%d members: %v", len(o.owns), o.owns)
		}
		seen := map[int]int{}
		for _, ps := range o.owns {
			if n := len(ps); n < provision.DefaultPartitions/members || n > (provision.DefaultPartitions+members-1)/members {
				return fmt.Errorf("unbalanced: %v", o.owns)
			}
			for _, p := range ps {
				seen[p]++
			}
		}
		for p := range provision.DefaultPartitions {
			if seen[p] != 1 {
				return fmt.Errorf("partition %d owned %d times: %v", p, seen[p], o.owns)
			}
		}
		return nil
	})
}

func (o *owners) ids() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for id := range o.owns {
		out = append(out, id)
	}
	return out
}

// The partitions are shared by the dispatchers that run, about P/d each,
// and move when one joins, stops or falls silent (its connection cut, as
// a killed process's); runs in every partition complete throughout, each
// applied by one process: a run's inputs never race on its record.
func TestPartitionsMoveWithDispatchers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := watchOwners(t, b)
	cfg := Config{PartitionHeartbeat: 500 * time.Millisecond}
	d1 := b.dispatcher(t, cfg)
	o.waitBalanced(t, 1)
	d2 := b.dispatcher(t, cfg)
	o.waitBalanced(t, 2)

	// Runs of every partition, each sent its events all at once: they
	// meet the one dispatcher that owns the run's partition.
	const runs, events = 48, 4
	for i := range runs {
		b.start(t, fmt.Sprintf("r%d", i), map[string]any{"events": events})
	}
	for i := range runs {
		for e := range events {
			b.publishAsync(t, b.names.Event(fmt.Sprintf("r%d", i), "e"), map[string]any{"n": e})
		}
	}
	for i := range runs {
		b.waitStatus(t, fmt.Sprintf("r%d", i), wire.StatusDone, 2*time.Minute)
	}
	if c := testutil.ToFloat64(d1.m.conflicts) + testutil.ToFloat64(d2.m.conflicts); c != 0 {
		t.Errorf("%v compare-and-swap conflicts between two dispatchers owning partitions, want 0", c)
	}

	// A third joins, on a connection of its own, then one stops: the
	// partitions follow.
	d3 := b.ownConnDispatcher(t, cfg)
	o.waitBalanced(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d2.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	o.waitBalanced(t, 2)

	// One falls silent: its connection is cut. The other takes all.
	before := o.ids()
	silent := silence(t, d3)
	o.waitBalanced(t, 1, silent)
	if len(before) != 2 {
		t.Fatalf("members before the cut: %v", before)
	}
	for i := range runs {
		b.start(t, fmt.Sprintf("s%d", i), map[string]any{})
	}
	for i := range runs {
		b.waitStatus(t, fmt.Sprintf("s%d", i), wire.StatusDone, 2*time.Minute)
	}
}

// ownConnDispatcher is b.dispatcher on a connection of its own, which
// silence may cut; it is stopped when the test ends, whatever Stop says.
func (b *bundle) ownConnDispatcher(t *testing.T, cfg Config) *Dispatcher {
	t.Helper()
	nc := natstest.Conn(t, b.srv)
	js := natstest.JetStream(t, nc)
	store, err := kvstore.OpenRunStore(testCtx(t), js, b.names)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = quietLogger(t)
	d, err := newDispatcher(js, store, b.loader, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = d.Stop(ctx)
	})
	return d
}

// silence cuts d's connection, as a killed process's would be, and
// returns its member id.
func silence(t *testing.T, d *Dispatcher) string {
	t.Helper()
	if d.parts == nil {
		t.Fatal("the dispatcher consumes no partitions")
	}
	d.js.Conn().Close()
	return d.parts.self.ID
}

// One member at a time runs the run indexer, the one that owns partition
// 0, so that a run's changes meet one process; when it stops, another
// takes over, and the changes it held are handed back, not left to the
// indexers' AckWait (five minutes here): the index catches up at once.
func TestOneMemberIndexesAndHandsOver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := watchOwners(t, b)
	cfg := Config{PartitionHeartbeat: 500 * time.Millisecond, Index: runindex.Config{AckWait: 5 * time.Minute}}
	ds := []*Dispatcher{b.dispatcher(t, cfg), b.dispatcher(t, cfg), b.dispatcher(t, cfg)}
	o.waitBalanced(t, 3)
	indexer := func() (*Dispatcher, error) {
		var on []*Dispatcher
		for _, d := range ds {
			if testutil.ToFloat64(d.m.indexers) == 1 {
				on = append(on, d)
			}
		}
		if len(on) != 1 {
			return nil, errorf("%d of %d dispatchers index, want 1", len(on), len(ds))
		}
		return on[0], nil
	}
	var first *Dispatcher
	natstest.WaitFor(t, time.Minute, "one indexer", func() (err error) { first, err = indexer(); return err })
	for _, d := range ds {
		want := 0.0
		if d == first {
			want = 1
		}
		if got := testutil.ToFloat64(d.m.indexers); got != want {
			t.Errorf("run_indexers of a dispatcher that indexes=%v: %v, want %v", d == first, got, want)
		}
	}

	const runs = 48
	for i := range runs {
		b.start(t, fmt.Sprintf("a%d", i), map[string]any{})
	}
	for i := range runs {
		b.waitStatus(t, fmt.Sprintf("a%d", i), wire.StatusDone, 2*time.Minute)
	}
	// More runs, and the indexer stops while their changes settle in it.
	for i := range runs {
		b.start(t, fmt.Sprintf("b%d", i), map[string]any{})
	}
	for i := range runs {
		b.waitStatus(t, fmt.Sprintf("b%d", i), wire.StatusDone, 2*time.Minute)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := first.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	ds = slices.DeleteFunc(ds, func(d *Dispatcher) bool { return d == first })
	o.waitBalanced(t, 2)
	natstest.WaitFor(t, time.Minute, "another indexer", func() error { _, err := indexer(); return err })

	cons, err := b.js.Consumer(testCtx(t), b.names.KVStream(b.names.RunBucket()), b.names.IndexerConsumer())
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, time.Minute, "every change indexed", func() error {
		ci, err := cons.Info(testCtx(t))
		if err != nil {
			return err
		}
		if ci.NumPending != 0 || ci.NumAckPending != 0 {
			return errorf("%d pending, %d delivered and not acknowledged", ci.NumPending, ci.NumAckPending)
		}
		return nil
	})
	for _, p := range []string{"a", "b"} {
		for i := range runs {
			run := fmt.Sprintf("%s%d", p, i)
			m, err := kvstore.DirectLast(testCtx(t), b.js, b.names.IndexStream(), b.names.IndexHead(run))
			if err != nil {
				t.Fatalf("run %s: index head: %v", run, err)
			}
			var h wire.IndexHead
			if err := json.Unmarshal(m.Data, &h); err != nil || h.Status != wire.StatusDone {
				t.Fatalf("run %s: index head %s (%v), want status done", run, m.Data, err)
			}
		}
	}
}
