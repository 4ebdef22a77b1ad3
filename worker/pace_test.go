package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/clock"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/worker"
)

// heartbeats counts every +WPI the worker sends for the task stream.
func (b *bundle) heartbeats(t *testing.T) <-chan struct{} {
	t.Helper()
	ch := make(chan struct{}, 64)
	sub, err := b.nc.Subscribe("$JS.ACK."+b.names.TaskStream()+".>", func(m *nats.Msg) {
		if string(m.Data) == "+WPI" {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return ch
}

// TestRedeployShorterStartToCloseIsFollowed: a worker bound while the
// task's startToClose was a minute (heartbeats every 5 s) notices a
// redeploy that lowers it to 2 s within the default ConsumerRefresh, and
// then heartbeats the next invocation within half of the new AckWait,
// which keeps the server from redelivering it
// (TestHeartbeatsPreventRedelivery). The worker runs on a manual clock
// that the test moves; the reporters behind it are heartbeat_internal_test.go's.
func TestRedeployShorterStartToCloseIsFollowed(t *testing.T) {
	t.Parallel()
	const short = 2 * time.Second
	b := setup(t)
	b.ensure(t, worker.TaskPolicy{StartToClose: time.Minute})
	progress := b.heartbeats(t)
	clk := clock.NewManual(time.Now())
	cfg := b.config()
	cfg.Clock = clk
	var calls atomic.Int32
	started, release := make(chan struct{}, 1), make(chan struct{})
	b.start(t, cfg, func(ctx context.Context, _ worker.Invocation) (any, error) {
		calls.Add(1)
		started <- struct{}{}
		select {
		case <-release:
			return "done", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}) // binds, reading the AckWait, before it returns

	b.ensure(t, worker.TaskPolicy{StartToClose: short}) // what a deploy does
	clk.Advance(worker.DefaultConsumerRefresh)
	natstest.WaitFor(t, wait, "the worker noticed the new AckWait", func() error {
		if !b.logs.contains("AckWait changed", "before=1m0s", "after=2s") {
			return errors.New("not yet")
		}
		return nil
	})
	b.publish(t, b.invocation("slow", nil))
	select {
	case <-started:
	case <-time.After(wait):
		t.Fatal("the handler never started")
	}
	// The heartbeat reporter is the worker's only timer.
	if err := clk.AwaitTimers(testCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(short / 2)
	select {
	case <-progress:
	case <-time.After(wait):
		t.Fatal("no heartbeat within half the new AckWait")
	}
	close(release)
	if res, _ := b.result(t); res.Error != nil {
		t.Fatal(res.Error.Message)
	}
	b.waitStreamMsgs(t, 0)
	if n := calls.Load(); n != 1 {
		t.Errorf("handler called %d times, want 1", n)
	}
	if info := b.consumerInfo(t); info.NumRedelivered != 0 || info.Delivered.Consumer != 1 {
		t.Errorf("redelivered %d, delivered %d; want 0 and 1", info.NumRedelivered, info.Delivered.Consumer)
	}
}
