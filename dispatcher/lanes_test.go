package dispatcher

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// parkRuns starts n runs that each wait for one event under a dispatcher
// that then stops, so that no process holds them: their events reach the
// next dispatcher in its stray lane, as the events that wake runs parked
// long enough to leave the cache do.
func (b *bundle) parkRuns(t *testing.T, prefix string, n int) []string {
	t.Helper()
	parker := b.dispatcher(t, Config{})
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%d", prefix, i)
		b.start(t, ids[i], map[string]any{"events": 1})
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

// When no input of a known run waits, every step goroutine but those
// kept for ready serves the stray lane: the events waking parked runs are
// stepped at nearly full concurrency, not by the few goroutines that
// serve stray alone. Each event's step is held after its save until that
// many are held at once.
func TestStrayLaneUsesEveryStepGoroutineWhenReadyIsEmpty(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const concurrency = 8
	want := concurrency - readyWorkers(concurrency) + strayWorkers(concurrency)
	if want <= 2*strayWorkers(concurrency) {
		t.Fatalf("%d stray steps at once would not tell the lanes apart", want)
	}
	ids := b.parkRuns(t, "parked", want)

	var held atomic.Int64
	all := make(chan struct{})
	// release lets the held steps go: once the test has seen them all
	// held, or when it fails, before the dispatcher is stopped.
	release := make(chan struct{})
	cfg := Config{Concurrency: concurrency}
	cfg.hooks = &hooks{at: func(p hookPoint, _, kind string) error {
		if p != hookAfterSave || kind != subjects.KindEvent {
			return nil
		}
		if held.Add(1) == int64(want) {
			close(all)
		}
		<-release
		return nil
	}}
	b.dispatcher(t, cfg)
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open)
	for _, id := range ids {
		b.publish(t, b.names.Event(id, "wake"), "up", "")
	}
	select {
	case <-all:
	case <-time.After(2 * time.Minute):
		t.Fatalf("%d of %d stray events stepped at once after two minutes: the stray lane is served by too few goroutines", held.Load(), want)
	}
	// With the stray lane's goroutines all busy, a start still goes
	// through on those kept for ready.
	b.start(t, "known", map[string]any{"done": true})
	b.waitStatus(t, "known", wire.StatusDone, 2*time.Minute)
	open()
	for _, id := range ids {
		b.waitStatus(t, id, wire.StatusDone, 2*time.Minute)
	}
}

// An event that wakes a run this process does not hold costs one read,
// the run's record: nothing reads the input stream for the run's start
// first, a read that only tells something about runs that do not exist.
func TestStrayEventOfAnExistingRunReadsNoStart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.parkRuns(t, "asleep", 20)

	// Every read of a stream's messages is a request on its API subject,
	// which a subscriber sees too.
	var reads atomic.Int64
	stream := b.names.InputStream()
	for _, api := range []string{"STREAM.MSG.GET", "DIRECT.GET"} {
		sub, err := b.nc.Subscribe(b.names.API(api, stream)+".>", func(*nats.Msg) { reads.Add(1) })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
		sub2, err := b.nc.Subscribe(b.names.API(api, stream), func(*nats.Msg) { reads.Add(1) })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub2.Unsubscribe() })
	}
	if err := b.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	d := b.dispatcher(t, Config{})
	for _, id := range ids {
		b.publish(t, b.names.Event(id, "wake"), "up", "")
	}
	for _, id := range ids {
		b.waitStatus(t, id, wire.StatusDone, 2*time.Minute)
	}
	if err := b.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	woken := reads.Load()
	// A run that does not exist is still refused after reading the
	// stream for its start, and that read is seen here: the count above
	// is not blind.
	b.publish(t, b.names.Event("nobody", "wake"), "up", "")
	natstest.WaitFor(t, 2*time.Minute, "the event of no run refused", func() error {
		if n := testutil.ToFloat64(d.m.messages.WithLabelValues("event", outcomeUnknownRun)); n != 1 {
			return fmt.Errorf("%v events of no run refused", n)
		}
		return nil
	})
	if err := b.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if woken != 0 {
		t.Errorf("%d reads of the input stream for %d events of existing runs, want 0", woken, len(ids))
	}
	if reads.Load() == woken {
		t.Error("no read of the input stream seen for the event of no run: the count is blind")
	}
}
