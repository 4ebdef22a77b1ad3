package worker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetflow/jetflow/worker"
)

func echo(_ context.Context, inv worker.Invocation) (any, error) { return inv.Node, nil }

func TestStopBeforeStartAndTwice(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.ensure(t, worker.TaskPolicy{})
	w, err := worker.New(b.js, b.config())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Stop(testCtx(t)); err != nil {
		t.Fatalf("Stop before Start: %v", err)
	}
	if err := w.Start(testCtx(t)); err == nil || !strings.Contains(err.Error(), "no task registered") {
		t.Fatalf("Start without tasks = %v", err)
	}
	if err := w.Register(task, version, echo); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := w.Start(testCtx(t)); err != nil {
			t.Fatalf("Start: %v", err)
		}
	}
	if err := w.Register("other", "1", echo); err == nil {
		t.Error("Register after Start was accepted")
	}
	b.publish(t, b.invocation("n1", nil))
	b.result(t)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := w.Stop(testCtx(t)); err != nil {
				t.Errorf("concurrent Stop: %v", err)
			}
		})
	}
	wg.Wait()
	if err := w.Stop(testCtx(t)); err != nil {
		t.Fatalf("Stop after Stop: %v", err)
	}
}

func TestStartStopStress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.ensure(t, worker.TaskPolicy{})
	cfg := b.config()
	cfg.PollWait = 20 * time.Millisecond
	w, err := worker.New(b.js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Register(task, version, echo); err != nil {
		t.Fatal(err)
	}
	for i := range 25 {
		if err := w.Start(testCtx(t)); err != nil {
			t.Fatalf("round %d: Start: %v", i, err)
		}
		if i%5 == 0 { // serve something now and then
			b.publish(t, b.invocation(fmt.Sprint("n", i), nil))
			if r, _ := b.result(t); r.Node != fmt.Sprint("n", i) {
				t.Fatalf("round %d: result for %q", i, r.Node)
			}
		}
		// Stop races a second Stop and, every other round, a Start.
		var wg sync.WaitGroup
		wg.Go(func() { _ = w.Stop(testCtx(t)) })
		if i%2 == 0 {
			wg.Go(func() { _ = w.Start(testCtx(t)) })
		}
		if err := w.Stop(testCtx(t)); err != nil {
			t.Fatalf("round %d: Stop: %v", i, err)
		}
		wg.Wait()
		if err := w.Stop(testCtx(t)); err != nil {
			t.Fatalf("round %d: final Stop: %v", i, err)
		}
	}
	b.waitStreamMsgs(t, 0)
}

func TestCancellingStartContextStops(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.ensure(t, worker.TaskPolicy{})
	started := make(chan struct{})
	causes := make(chan error, 1)
	w, err := worker.New(b.js, b.config())
	if err != nil {
		t.Fatal(err)
	}
	stopCause := errors.New("shutting down the pod")
	if err := w.Register(task, version, func(ctx context.Context, _ worker.Invocation) (any, error) {
		close(started)
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	b.publish(t, b.invocation("n1", nil))
	<-started
	cancel(stopCause)
	select {
	case c := <-causes:
		if !errors.Is(c, stopCause) {
			t.Errorf("handler cause = %v, want the Start context's cause", c)
		}
	case <-time.After(wait):
		t.Fatal("cancelling the Start context did not cancel the handler")
	}
	if err := w.Stop(testCtx(t)); err != nil {
		t.Fatalf("Stop after the Start context ended: %v", err)
	}
}

func TestConfigAndRegisterValidation(t *testing.T) {
	t.Parallel()
	if _, err := worker.New(nil, worker.Config{}); err == nil {
		t.Error("New accepted a nil JetStream")
	}
	b := setup(t)
	bad := []worker.Config{
		{Concurrency: -1},
		{PollWait: time.Millisecond},
		{HeartbeatInterval: -time.Second},
		{ConsumerRefresh: time.Millisecond},
		{ConsumerRefresh: -time.Second},
		{ConsumerPolicy: worker.TaskPolicy{MaxAckPending: -1}},
	}
	for _, c := range bad {
		if _, err := worker.New(b.js, c); err == nil {
			t.Errorf("New accepted %+v", c)
		}
	}
	w, err := worker.New(b.js, worker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	regs := []struct {
		task, version string
		h             worker.Handler
		opts          []worker.RegisterOption
	}{
		{"a.b", "1", echo, nil},
		{"a", "1~2", echo, nil},
		{"a", "", echo, nil},
		{"a", "1", nil, nil},
		{"a", "1", echo, []worker.RegisterOption{worker.MaxConcurrency(0)}},
	}
	for _, r := range regs {
		if err := w.Register(r.task, r.version, r.h, r.opts...); err == nil {
			t.Errorf("Register(%q, %q) accepted", r.task, r.version)
		}
	}
	if err := w.Register("a", "1", echo); err != nil {
		t.Fatal(err)
	}
	if err := w.Register("a", "1", echo); err == nil {
		t.Error("a second registration of the same task version was accepted")
	}
}
