package fleet

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// served records the order invocations reached the worker in.
type served struct {
	mu   sync.Mutex
	runs []string
}

func (s *served) add(run string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs = append(s.runs, run)
}

func (s *served) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.runs)
}

// TestPriorityPassesTheBacklog: with two attempts in flight at most and
// twenty low-priority runs waiting, a run started at priority 9 is the
// next delivered once a slot frees: at most one task's duration late,
// whatever the backlog. Only the attempts already running, and one the
// admitter may have moved in the moment before the high run's invocation
// was queued, go before it; in stream order it would be twenty-first.
func TestPriorityPassesTheBacklog(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	f := startFleet(t, ctx)
	if _, err := f.DeployWith(ctx, "ranked", catching("ranked", "v1"),
		DeployOptions{Policy: mustPolicy(t, `{"ranked@1":{"priority":0,"maxConcurrency":2}}`)}); err != nil {
		t.Fatal(err)
	}
	var order served
	startWorker(t, ctx, f.JS, f, map[string]worker.Handler{
		"ranked": func(ctx context.Context, inv worker.Invocation) (any, error) {
			order.add(inv.Run)
			select {
			case <-time.After(300 * time.Millisecond):
				return "ok", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	})
	const low = 20
	for i := range low {
		if err := f.Client.StartRun(ctx, "ranked", fmt.Sprintf("low-%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for len(order.list()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the worker got %v, want two low runs in flight", order.list())
		}
		time.Sleep(10 * time.Millisecond)
	}
	before := len(order.list())
	if err := f.Client.StartRun(ctx, "ranked", "high", nil, client.WithPriority(9)); err != nil {
		t.Fatal(err)
	}
	for i := range low {
		if st, err := f.Client.Wait(ctx, fmt.Sprintf("low-%d", i)); err != nil || st.Status != wire.StatusDone {
			t.Fatalf("run low-%d: %+v, %v", i, st, err)
		}
	}
	if st, err := f.Client.Wait(ctx, "high"); err != nil || st.Status != wire.StatusDone {
		t.Fatalf("run high: %+v, %v", st, err)
	}
	got := order.list()
	at := slices.Index(got, "high")
	if at < 0 || len(got) != low+1 {
		t.Fatalf("served %v", got)
	}
	if passed := at - before; passed > 1 {
		t.Fatalf("%d low-priority attempts were delivered after the high run started and before it (served %v)", passed, got)
	}
	t.Logf("served in order: %v; the high run started after %d, was delivered %d-th", got, before, at+1)
}
