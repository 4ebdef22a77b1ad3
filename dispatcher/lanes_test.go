package dispatcher

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

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

// When no input of a known run waits, every step goroutine serves the
// stray lane: the events waking parked runs are stepped Concurrency at a
// time, not by the few goroutines that serve stray alone. Each event's
// step is held after its save until Concurrency of them are held at once,
// which only happens if that many goroutines work the stray lane.
func TestStrayLaneUsesEveryStepGoroutineWhenReadyIsEmpty(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const concurrency = 8
	if strayWorkers(concurrency) >= concurrency {
		t.Fatalf("strayWorkers(%d) = %d: the test needs fewer stray-only goroutines than Concurrency", concurrency, strayWorkers(concurrency))
	}
	ids := b.parkRuns(t, "parked", concurrency)

	var held atomic.Int64
	all := make(chan struct{})
	// release lets held steps go when the test fails, before the
	// dispatcher is stopped.
	release := make(chan struct{})
	cfg := Config{Concurrency: concurrency}
	cfg.hooks = &hooks{at: func(p hookPoint, _, kind string) error {
		if p != hookAfterSave || kind != subjects.KindEvent {
			return nil
		}
		if held.Add(1) == concurrency {
			close(all)
		}
		select {
		case <-all:
		case <-release:
		}
		return nil
	}}
	b.dispatcher(t, cfg)
	t.Cleanup(func() { close(release) })
	for _, id := range ids {
		b.publish(t, b.names.Event(id, "wake"), "up", "")
	}
	select {
	case <-all:
	case <-time.After(2 * time.Minute):
		t.Fatalf("%d of %d stray events stepped at once after two minutes: the stray lane is served by fewer goroutines than Concurrency", held.Load(), concurrency)
	}
	for _, id := range ids {
		b.waitStatus(t, id, wire.StatusDone, 2*time.Minute)
	}
}
