package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/jetflow/jetflow/worker"
)

// The handler's context ends at the attempt's deadline (a little after,
// for clock skew), and an invocation delivered past it is not run.
func TestInvocationDeadline(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.ensure(t, worker.TaskPolicy{})
	terms := b.terminations(t)
	seen := make(chan time.Time, 4)
	b.start(t, b.config(), func(ctx context.Context, inv worker.Invocation) (any, error) {
		d, _ := ctx.Deadline()
		if !d.Equal(inv.Deadline.Add(2 * time.Second)) {
			t.Errorf("handler context deadline %v, invocation deadline %v", d, inv.Deadline)
		}
		seen <- d
		return "ok", nil
	})
	due := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	inv := b.invocation("timely", nil)
	inv.Deadline = float64(due.UnixMilli())
	b.publish(t, inv)
	if res, _ := b.result(t); res.Node != "timely" || string(res.Output) != `"ok"` {
		t.Fatalf("result %+v", res)
	}
	if d := <-seen; d.IsZero() {
		t.Fatal("no deadline on the handler's context")
	}

	late := b.invocation("late", nil)
	late.Deadline = float64(time.Now().Add(-time.Minute).UnixMilli())
	b.publish(t, late)
	select {
	case reason := <-terms:
		if reason != "past its deadline" {
			t.Errorf("terminated for %q", reason)
		}
	case <-time.After(time.Minute):
		t.Fatal("an invocation past its deadline was not terminated")
	}
	select {
	case <-seen:
		t.Error("the handler ran an invocation past its deadline")
	default:
	}
}
