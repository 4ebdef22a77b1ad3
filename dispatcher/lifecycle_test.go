package dispatcher

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jetflow/jetflow/wire"
)

func TestLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d, err := newDispatcher(b.js, b.store, b.loader, Config{Logger: quietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	if err := d.Stop(ctx); err != nil {
		t.Fatalf("stop before start: %v", err)
	}
	for i := range 5 {
		if err := d.Start(ctx); err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		if err := d.Start(ctx); err != nil {
			t.Fatalf("second start %d: %v", i, err)
		}
		b.start(t, fmt.Sprintf("l%d", i), nil)
		b.waitStatus(t, fmt.Sprintf("l%d", i), wire.StatusDone, 10*time.Second)
		if err := d.Stop(ctx); err != nil {
			t.Fatalf("stop %d: %v", i, err)
		}
		if err := d.Stop(ctx); err != nil {
			t.Fatalf("second stop %d: %v", i, err)
		}
	}
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
	d1 := b.dispatcher(t, Config{hooks: &hooks{at: func(p hookPoint, _, _ string) error {
		if p == hookAfterSave {
			once.Do(func() { close(reached) })
			time.Sleep(300 * time.Millisecond)
		}
		return nil
	}}})
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
