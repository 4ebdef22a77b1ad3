package lifecycle

import (
	"context"
	"sync/atomic"
	"testing"
)

// TestLoop: one body at a time; Stop cancels it, interrupts and waits;
// Start after Stop runs a new body.
func TestLoop(t *testing.T) {
	t.Parallel()
	var l Loop
	var running, runs atomic.Int32
	body := func(ctx context.Context) {
		runs.Add(1)
		running.Add(1)
		defer running.Add(-1)
		<-ctx.Done()
	}
	l.Start(body)
	l.Start(body)
	interrupted := false
	l.Stop(func() { interrupted = true })
	if running.Load() != 0 || !interrupted {
		t.Fatalf("after Stop: %d running, interrupted %v", running.Load(), interrupted)
	}
	l.Stop(func() { t.Error("Stop without a body interrupted") })
	l.Start(body)
	l.Stop(nil)
	if runs.Load() != 2 {
		t.Errorf("%d bodies ran, want 2 (a Start while one runs starts none)", runs.Load())
	}
}
