package fleet

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// TestRetryAfterDelaysAndClosesTask: a worker's first attempt fails with
// worker.CloseTask(10s): its retry waits the 10 s (not the policy's 50 ms
// backoff), and the task version's consumer is paused for them, so a run
// started meanwhile gets its first attempt only when the pause ends.
func TestRetryAfterDelaysAndClosesTask(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f := startFleet(t, ctx)
	if _, err := f.DeployWith(ctx, "busy", catching("busy", "v1"),
		DeployOptions{Policy: mustPolicy(t, `{"busy":{"maxAttempts":3,"initialInterval":"50ms","maxInterval":"100ms"}}`)}); err != nil {
		t.Fatal(err)
	}
	const closed = 10 * time.Second
	var mu sync.Mutex
	seen := map[string][]time.Time{}
	startWorker(t, ctx, f.JS, f, map[string]worker.Handler{
		"busy": func(_ context.Context, inv worker.Invocation) (any, error) {
			mu.Lock()
			seen[inv.Run] = append(seen[inv.Run], time.Now())
			mu.Unlock()
			if inv.Run == "b-1" && inv.Attempt == 1 {
				return nil, worker.CloseTask(closed, errors.New("upstream says 429"))
			}
			return "ok", nil
		},
	})
	if err := f.Client.StartRun(ctx, "busy", "b-1", nil); err != nil {
		t.Fatal(err)
	}
	var until time.Time
	natstest.WaitFor(t, 2*time.Minute, "the task version is closed", func() error {
		paused, u, err := provision.TaskPaused(ctx, f.JS, f.Names, "busy", "1")
		if err != nil {
			return err
		}
		if !paused {
			return errors.New("not paused")
		}
		until = u
		return nil
	})
	if err := f.Client.StartRun(ctx, "busy", "b-2", nil); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"b-1", "b-2"} {
		st, err := f.Client.Wait(ctx, id)
		if err != nil || st.Status != wire.StatusDone || st.State != "/states/ok" {
			t.Fatalf("run %s: %+v, %v", id, st, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if a := seen["b-1"]; len(a) != 2 || a[1].Sub(a[0]) < closed {
		t.Fatalf("b-1's attempts at %v: want two, the second %v after the first", a, closed)
	}
	// The server ends the pause at until; allow its clock a little skew.
	if b := seen["b-2"]; len(b) != 1 || b[0].Before(until.Add(-100*time.Millisecond)) {
		t.Fatalf("b-2's attempt at %v, before the task reopened at %v", b, until)
	}
}
