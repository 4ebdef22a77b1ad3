package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jetflow/jetflow/clock"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/wire"
)

func TestStepLimitCutsOncePerWindowAndClimbsBack(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	var reported []float64
	l := newStepLimit(64, clk.Now, func(v float64) { reported = append(reported, v) })
	ctx := context.Background()
	for range 64 {
		if !l.acquire(ctx) {
			t.Fatal("acquire refused below the limit")
		}
	}
	// A burst of timeouts from one congestion: one cut.
	for range 8 {
		l.release(true)
	}
	if got := int(l.limit); got != 32 {
		t.Fatalf("limit after a burst of timeouts within a window: %d, want 32", got)
	}
	clk.Advance(backoffWindow)
	for range 4 {
		l.release(true)
		clk.Advance(backoffWindow)
	}
	if got := int(l.limit); got != 4 {
		t.Fatalf("limit after five cuts a window apart: %d, want 4 (32 halved four times: 2, floored at 4)", got)
	}
	// 52 places are still held; they drain without a timeout, and the
	// limit climbs by one for each limit's worth of completed steps.
	for range 52 {
		l.release(false)
	}
	if got := int(l.limit); got < 10 || got > 11 {
		t.Fatalf("limit after 52 completed steps from 4: %d, want 10 (4+1/4+...)", got)
	}
	for l.limit < 64 {
		if !l.acquire(ctx) {
			t.Fatal("acquire refused")
		}
		l.release(false)
	}
	if got := int(l.limit); got != 64 {
		t.Fatalf("limit %d, want it back at Concurrency, 64, and no higher", got)
	}
	if reported[0] != 64 || reported[len(reported)-1] != 64 || !slices.Contains(reported, 4) {
		t.Errorf("gauge reported %v, want 64 first, 4 at the floor, 64 last", reported)
	}
}

func TestStepLimitWaitsForAPlace(t *testing.T) {
	l := newStepLimit(2, time.Now, nil)
	ctx := context.Background()
	l.acquire(ctx)
	if !l.tryAcquire() {
		t.Fatal("tryAcquire refused a free place")
	}
	if l.tryAcquire() {
		t.Fatal("tryAcquire took a third place at a limit of 2")
	}
	got := make(chan bool)
	go func() { got <- l.acquire(ctx) }()
	select {
	case <-got:
		t.Fatal("a third step ran beside two at a limit of 2")
	case <-time.After(50 * time.Millisecond):
	}
	l.release(false)
	if !<-got {
		t.Fatal("acquire refused once a place was free")
	}
	// A stop wakes a waiter, which then takes nothing.
	cctx, cancel := context.WithCancel(ctx)
	go func() { got <- l.acquire(cctx) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if <-got {
		t.Fatal("acquire took a place after its context ended")
	}
	if l.inUse != 2 {
		t.Errorf("%d places in use, want 2", l.inUse)
	}
}

func TestIsTimeout(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("kvstore: update run %q: %w", "r", context.DeadlineExceeded), true},
		{fmt.Errorf("publish jetflow.task.x.1: %w", nats.ErrTimeout), true},
		{fmt.Errorf("%w: stale", errConflict), false},
		{errors.New("status 503 no responders"), false},
		{context.Canceled, false},
	} {
		if got := isTimeout(c.err); got != c.want {
			t.Errorf("isTimeout(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestTimeoutsCutTheStepLimit: saves that time out cut the steps a
// dispatcher runs at once, and the run still ends once they go through.
func TestTimeoutsCutTheStepLimit(t *testing.T) {
	t.Parallel()
	b := setup(t).withEngine(t, map[string]string{"one": oneTask}, registry.TaskRef{Task: "echo", Version: "1"})
	var fails atomic.Int32
	d := b.dispatcher(t, Config{Concurrency: 16, RetryDelay: 50 * time.Millisecond, hooks: &hooks{save: func(runID string) error {
		if runID == "r" && fails.Add(1) <= 3 {
			return fmt.Errorf("kvstore: update run %q: %w", runID, context.DeadlineExceeded)
		}
		return nil
	}}})
	if got := testutil.ToFloat64(d.m.stepLimit); got != 16 {
		t.Fatalf("step limit %v before any timeout, want Concurrency, 16", got)
	}
	b.simpleWorker(t, "echo", "1")
	b.startTask(t, "r", "p")
	b.waitStatus(t, "r", wire.StatusDone, 30*time.Second)
	// Three timeouts 50-200 ms apart: one cut (one per backoffWindow, or
	// two on a machine slow enough to space them a second apart), and
	// too few steps since to climb back.
	if got := testutil.ToFloat64(d.m.stepLimit); got != 8 && got != 4 {
		t.Errorf("step limit %v after three timed-out saves, want 8 (or 4)", got)
	}
}

// TestInputsWaitingForAPlaceAreKeptInHand: an input waiting for its place
// among the steps at once stays in hand (keepInHand), so its AckWait does
// not run out however long the cut limit makes it wait. Taken from its
// queue before the wait, it was redelivered and met applied.
func TestInputsWaitingForAPlaceAreKeptInHand(t *testing.T) {
	t.Parallel()
	b := setup(t).withEngine(t, map[string]string{"one": oneTask}, registry.TaskRef{Task: "echo", Version: "1"})
	// keepInHand renews an input held 2 s every second, so one is at
	// most about 3 s old when renewed: a second to spare on a loaded
	// machine. A step itself (400 ms here) is never renewed.
	d := b.dispatcher(t, Config{Concurrency: 8, AckWait: 4 * time.Second, hooks: &hooks{save: func(string) error {
		time.Sleep(400 * time.Millisecond) // a slow store
		return nil
	}}})
	// One step at a time, for good: 20 steps of 400 ms, the last inputs
	// waiting about 8 s, two AckWaits.
	d.limit.mu.Lock()
	d.limit.limit, d.limit.max = 1, 1
	d.limit.mu.Unlock()
	b.simpleWorker(t, "echo", "1")
	var runs []string
	for i := range 10 {
		runs = append(runs, fmt.Sprintf("k%d", i))
	}
	for _, id := range runs {
		b.startTask(t, id, id)
	}
	for _, id := range runs {
		b.waitStatus(t, id, wire.StatusDone, time.Minute)
	}
	if got := testutil.ToFloat64(d.m.redelivery); got != 0 {
		t.Errorf("%v inputs redelivered while they waited for a place, want 0", got)
	}
}
