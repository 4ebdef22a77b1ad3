package worker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/lifecycle/lifecycletest"
	"github.com/jetflow/jetflow/worker"
)

func echo(_ context.Context, inv worker.Invocation) (any, error) { return inv.Node, nil }

// TestLifecycleContract runs the lifecycle contract on a worker serving
// one task, checking after every start that it serves an invocation.
func TestLifecycleContract(t *testing.T) {
	t.Parallel()
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		b := setup(t)
		b.ensure(t, worker.TaskPolicy{})
		cfg := b.config()
		cfg.PollWait = 20 * time.Millisecond // a graceful stop waits for the pull in flight
		w, err := worker.New(b.js, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Register(task, version, echo); err != nil {
			t.Fatal(err)
		}
		served := 0
		return lifecycletest.Subject{Service: w, Serves: func(t *testing.T) {
			served++
			node := fmt.Sprint("n", served)
			b.publish(t, b.invocation(node, nil))
			if r, _ := b.result(t); r.Node != node {
				t.Fatalf("result for %q, want %q", r.Node, node)
			}
			b.waitStreamMsgs(t, 0)
		}}
	})
}

// Start needs a task; Register is refused from Start to Stop.
func TestRegisterOnlyWhileStopped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.ensure(t, worker.TaskPolicy{})
	w, err := worker.New(b.js, b.config())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(testCtx(t)); err == nil || !strings.Contains(err.Error(), "no task registered") {
		t.Fatalf("Start without tasks = %v", err)
	}
	if err := w.Register(task, version, echo); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(testCtx(t)); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := w.Register("other", "1", echo); err == nil {
		t.Error("Register after Start was accepted")
	}
	if err := w.Stop(testCtx(t)); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := w.Register("other", "1", echo); err != nil {
		t.Errorf("Register after Stop: %v", err)
	}
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
