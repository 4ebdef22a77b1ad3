package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/subjects"
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
	// Counted from when its invocation is seen queued, when it is: how
	// long the dispatcher takes to step the start is not the queue's
	// doing.
	qs, err := f.JS.Stream(ctx, f.Names.QueueStream())
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 2*time.Minute, "the high run's invocation queued, or served", func() error {
		served := len(order.list())
		_, err := qs.GetLastMsgForSubject(ctx, f.Names.Queue("ranked", "1", 9, subjects.NoKey))
		switch {
		case err == nil:
			before = served
			return nil
		case errors.Is(err, jetstream.ErrMsgNotFound) && slices.Contains(order.list(), "high"):
			return nil // moved before it was seen; count from its start
		}
		return fmt.Errorf("not queued yet: %w", err)
	})
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
	// The two slots were full when it was queued: the next to free is
	// its, unless the admitter moved one more before its view had it.
	if passed := at - before; passed > 1 {
		t.Fatalf("%d low-priority attempts were delivered after the high run started and before it (served %v)", passed, got)
	}
	t.Logf("served in order: %v; the high run started after %d, was delivered %d-th", got, before, at+1)
}

// TestFairnessAcrossKeys: one tenant's thirty runs wait; runs of three
// other tenants started after them are served round robin with it, each
// within a few deliveries, not after the thirty; and maxPerKey 1 keeps
// the big tenant to one attempt in flight although the task version
// allows three.
func TestFairnessAcrossKeys(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	f := startFleet(t, ctx)
	if _, err := f.DeployWith(ctx, "fair", catching("fair", "v1"),
		DeployOptions{Policy: mustPolicy(t, `{"fair@1":{"key":"$.input.tenant","maxPerKey":1,"maxConcurrency":3}}`)}); err != nil {
		t.Fatal(err)
	}
	var order served
	var mu sync.Mutex
	running := map[string]int{}
	most := map[string]int{}
	startWorker(t, ctx, f.JS, f, map[string]worker.Handler{
		"fair": func(ctx context.Context, inv worker.Invocation) (any, error) {
			var in struct{ Tenant string }
			if err := inv.DecodeInput(&in); err != nil {
				return nil, err
			}
			order.add(inv.Run)
			mu.Lock()
			running[in.Tenant]++
			most[in.Tenant] = max(most[in.Tenant], running[in.Tenant])
			mu.Unlock()
			defer func() { mu.Lock(); running[in.Tenant]--; mu.Unlock() }()
			select {
			case <-time.After(200 * time.Millisecond):
				return "ok", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	})
	const big = 30
	for i := range big {
		if err := f.Client.StartRun(ctx, "fair", fmt.Sprintf("big-%d", i), map[string]any{"tenant": "big"}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for len(order.list()) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the worker got nothing")
		}
		time.Sleep(10 * time.Millisecond)
	}
	before := len(order.list())
	small := []string{"a", "b", "c"}
	for _, tenant := range small {
		if err := f.Client.StartRun(ctx, "fair", "small-"+tenant, map[string]any{"tenant": tenant}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range big {
		if st, err := f.Client.Wait(ctx, fmt.Sprintf("big-%d", i)); err != nil || st.Status != wire.StatusDone {
			t.Fatalf("run big-%d: %+v, %v", i, st, err)
		}
	}
	got := order.list()
	for _, tenant := range small {
		at := slices.Index(got, "small-"+tenant)
		if at < 0 {
			t.Fatalf("small-%s never served: %v", tenant, got)
		}
		// Round robin over four keys, the big one limited to one
		// attempt at a time: each small run is among the next few.
		if at-before > 4 {
			t.Errorf("small-%s served %d deliveries after it started (served %v)", tenant, at-before, got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if most["big"] > 1 {
		t.Errorf("the big tenant had %d attempts in flight at once, above maxPerKey 1", most["big"])
	}
	t.Logf("served in order: %v; the small runs started after %d", got, before)
}

// TestQueuedAttemptStillTimesOut: with no worker, the first run's
// invocation fills the task subject's backlog and the second's waits in
// the queue; each attempt still fails at its deadline with TASK_TIMEOUT,
// is retried (queued again), and the runs end caught. The queue keeps
// nothing once the deadlines passed: the expired invocations are deleted
// rather than moved, or expire.
func TestQueuedAttemptStillTimesOut(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	f := startFleet(t, ctx)
	if _, err := f.DeployWith(ctx, "stuck", catching("stuck", "v1"),
		DeployOptions{Policy: mustPolicy(t, `{"stuck@1":{"priority":3,"maxConcurrency":1,"attemptTimeout":"2s","maxAttempts":2,"initialInterval":"100ms"}}`)}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"first", "second"} {
		if err := f.Client.StartRun(ctx, "stuck", id, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"first", "second"} {
		st, err := f.Client.Wait(ctx, id)
		if err != nil || st.Status != wire.StatusDone || st.State != "/states/caught" {
			t.Fatalf("run %s: %+v, %v; want caught after its attempts timed out", id, st, err)
		}
	}
	qs, err := f.JS.Stream(ctx, f.Names.QueueStream())
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 2*time.Minute, "an empty queue after four queued attempts", func() error {
		info, err := qs.Info(ctx)
		if err != nil {
			return err
		}
		if info.State.LastSeq < 4 || info.State.Msgs != 0 {
			return fmt.Errorf("queue stream: %d queued in all, %d left", info.State.LastSeq, info.State.Msgs)
		}
		return nil
	})
}
