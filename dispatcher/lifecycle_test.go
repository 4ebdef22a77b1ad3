package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jetflow/jetflow/lifecycle/lifecycletest"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/wire"
)

// TestLifecycleContract runs the lifecycle contract on a dispatcher,
// checking after every start that it drives a run to its end.
func TestLifecycleContract(t *testing.T) {
	t.Parallel()
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		b := setup(t)
		d, err := newDispatcher(b.js, b.store, b.loader, Config{Logger: quietLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		runs := 0
		return lifecycletest.Subject{Service: d, Serves: func(t *testing.T) {
			runs++
			id := fmt.Sprintf("l%d", runs)
			b.start(t, id, nil)
			b.waitStatus(t, id, wire.StatusDone, 10*time.Second)
		}}
	})
}

func TestStartFailsWithoutProvisioning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := b.js.DeleteStream(testCtx(t), b.names.InputStream()); err != nil {
		t.Fatal(err)
	}
	d, err := newDispatcher(b.js, b.store, b.loader, Config{Logger: quietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(testCtx(t)); err == nil {
		_ = d.Stop(testCtx(t))
		t.Fatal("Start succeeded without an input stream")
	}
}

func TestStopOutOfTimeHandsInputsBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reached := make(chan struct{})
	var once sync.Once
	var d1 *Dispatcher
	d1, err := newDispatcher(b.js, b.store, b.loader, Config{Logger: quietLogger(t), hooks: &hooks{at: func(p hookPoint, _, _ string) error {
		if p == hookAfterSave {
			once.Do(func() { close(reached) })
			// The step outlasts Stop's context: it goes on only once Stop
			// has given up on it.
			<-d1.ctx.Done()
		}
		return nil
	}}})
	if err != nil {
		t.Fatal(err)
	}
	running(t, d1)
	b.simpleWorker(t, "echo", "1")
	b.startTask(t, "h", "x")
	<-reached
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := d1.Stop(ctx); err == nil {
		t.Fatal("Stop met its deadline while a step was still running")
	}
	d2 := b.dispatcher(t, Config{})
	b.waitStatus(t, "h", wire.StatusDone, 10*time.Second)
	b.consumerSettled(t, 5*time.Second)
	if got := testutil.ToFloat64(d1.m.messages.WithLabelValues("start", outcomeAbandoned)); got != 1 {
		t.Errorf("d1 abandoned %v starts, want 1", got)
	}
	if got := testutil.ToFloat64(d2.m.messages.WithLabelValues("start", outcomeDuplicate)); got != 1 {
		t.Errorf("d2 found %v starts already applied, want 1", got)
	}
}

// TestStopHandsBackInputsNotYetStepped: a stop waits for the step in
// flight only; the inputs queued behind it go back to the stream at once,
// and another dispatcher applies each of them once.
func TestStopHandsBackInputsNotYetStepped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const queued = 20
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	d1, err := newDispatcher(b.js, b.store, b.loader, Config{Logger: quietLogger(t), Concurrency: 1, hooks: &hooks{at: func(p hookPoint, _, _ string) error {
		if p == hookAfterSave {
			once.Do(func() { close(reached); <-release })
		}
		return nil
	}}})
	if err != nil {
		t.Fatal(err)
	}
	running(t, d1)
	b.start(t, "first", nil)
	<-reached
	for i := range queued {
		b.start(t, fmt.Sprintf("q%d", i), nil)
	}
	// Every start is in d1's hands, queued behind the one in flight.
	natstest.WaitFor(t, 10*time.Second, "the starts queued in d1", func() error {
		d1.qmu.Lock()
		defer d1.qmu.Unlock()
		if n := len(d1.queues); n != queued+1 {
			return fmt.Errorf("%d runs queued", n)
		}
		return nil
	})
	stopped := make(chan error, 1)
	go func() { stopped <- d1.Stop(testCtx(t)) }()
	natstest.WaitFor(t, 10*time.Second, "Stop to stop pulling", func() error {
		d1.qmu.Lock()
		defer d1.qmu.Unlock()
		if !d1.handBack {
			return errors.New("still pulling")
		}
		return nil
	})
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if got := testutil.ToFloat64(d1.m.messages.WithLabelValues("start", outcomeAbandoned)); got != queued {
		t.Errorf("d1 handed back %v starts, want the %d it had not stepped", got, queued)
	}
	if got := testutil.ToFloat64(d1.m.messages.WithLabelValues("start", outcomeApplied)); got != 1 {
		t.Errorf("d1 applied %v starts, want only the one in flight", got)
	}
	b.dispatcher(t, Config{})
	b.waitStatus(t, "first", wire.StatusDone, 10*time.Second)
	for i := range queued {
		b.waitStatus(t, fmt.Sprintf("q%d", i), wire.StatusDone, 10*time.Second)
	}
}
