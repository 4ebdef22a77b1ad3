package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

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

// slowHandler runs until n heartbeats went out, and returns how long it
// ran in milliseconds; every call is counted and started is signalled.
func slowHandler(progress <-chan struct{}, n int, calls *atomic.Int32, started chan<- struct{}) worker.Handler {
	return func(ctx context.Context, inv worker.Invocation) (any, error) {
		calls.Add(1)
		if inv.Delivery > 1 {
			return nil, fmt.Errorf("delivery %d: the invocation was redelivered", inv.Delivery)
		}
		select {
		case started <- struct{}{}:
		default:
		}
		began := time.Now()
		for i := range n {
			select {
			case <-progress:
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(wait):
				return nil, fmt.Errorf("heartbeat %d never sent", i+1)
			}
		}
		return time.Since(began).Milliseconds(), nil
	}
}

// checkRanOnceLongerThan checks the one result: no error, a handler that
// ran longer than d, called once, and a consumer that redelivered nothing.
func (b *bundle) checkRanOnceLongerThan(t *testing.T, d time.Duration, calls *atomic.Int32) {
	t.Helper()
	res, _ := b.result(t)
	if res.Error != nil {
		t.Fatal(res.Error.Message)
	}
	var ran int64
	if err := json.Unmarshal(res.Output, &ran); err != nil || time.Duration(ran)*time.Millisecond <= d {
		t.Fatalf("handler ran %sms, want longer than the new startToClose %v (%v)", res.Output, d, err)
	}
	b.waitStreamMsgs(t, 0)
	if n := calls.Load(); n != 1 {
		t.Errorf("handler called %d times, want 1", n)
	}
	if info := b.consumerInfo(t); info.NumRedelivered != 0 || info.Delivered.Consumer != 1 {
		t.Errorf("redelivered %d, delivered %d; want 0 and 1", info.NumRedelivered, info.Delivered.Consumer)
	}
}

// TestRedeployShorterStartToCloseIsFollowed: a worker bound while the
// task's startToClose was a minute (heartbeats every 5 s) notices a
// redeploy that lowers it to 2 s, with the default ConsumerRefresh, and
// then heartbeats fast enough that a task longer than 2 s is not
// redelivered.
func TestRedeployShorterStartToCloseIsFollowed(t *testing.T) {
	t.Parallel()
	const short = 2 * time.Second
	b := setup(t)
	b.ensure(t, worker.TaskPolicy{StartToClose: time.Minute})
	progress := b.heartbeats(t)
	var calls atomic.Int32
	b.start(t, b.config(), slowHandler(progress, 4, &calls, nil)) // binds before it returns

	b.ensure(t, worker.TaskPolicy{StartToClose: short}) // what a deploy does
	natstest.WaitFor(t, wait, "the worker noticed the new AckWait", func() error {
		if !b.logs.contains("AckWait changed", "before=1m0s", "after=2s") {
			return errors.New("not yet")
		}
		return nil
	})
	b.publish(t, b.invocation("slow", nil))
	b.checkRanOnceLongerThan(t, short, &calls)
}

// TestRunningInvocationFollowsRedeploy: an invocation already running
// when a deploy lowers startToClose from a minute to 3 s is re-paced
// within ConsumerRefresh. Its worker's HeartbeatInterval is set (one hour,
// so half the AckWait), so only the re-read can save it from redelivery.
func TestRunningInvocationFollowsRedeploy(t *testing.T) {
	t.Parallel()
	const short = 3 * time.Second
	b := setup(t)
	b.ensure(t, worker.TaskPolicy{StartToClose: time.Minute})
	progress := b.heartbeats(t)
	var calls atomic.Int32
	started := make(chan struct{}, 1)
	cfg := b.config()
	cfg.HeartbeatInterval, cfg.ConsumerRefresh = time.Hour, 200*time.Millisecond
	b.start(t, cfg, slowHandler(progress, 3, &calls, started))
	b.publish(t, b.invocation("slow", nil))
	select {
	case <-started:
	case <-time.After(wait):
		t.Fatal("the handler never started")
	}
	b.ensure(t, worker.TaskPolicy{StartToClose: short})
	b.checkRanOnceLongerThan(t, short, &calls)
	if !b.logs.contains("AckWait changed", "before=1m0s", "after=3s") {
		t.Error("the worker did not log the new AckWait")
	}
}
