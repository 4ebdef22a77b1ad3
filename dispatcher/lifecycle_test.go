package dispatcher

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jetflow/jetflow/lifecycle/lifecycletest"
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
