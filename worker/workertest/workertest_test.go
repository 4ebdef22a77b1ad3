package workertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/worker"
	"github.com/jetflow/jetflow/worker/workertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestInvoke(t *testing.T) {
	t.Parallel()
	var seen worker.Invocation
	h := func(_ context.Context, inv worker.Invocation) (any, error) {
		seen = inv
		var in struct{ N int }
		if err := inv.DecodeInput(&in); err != nil {
			return nil, err
		}
		if in.N < 0 {
			return nil, worker.WithCode("NEGATIVE", worker.NonRetryable(errors.New("n is negative")))
		}
		if in.N == 13 {
			panic("unlucky")
		}
		return map[string]int{"double": in.N * 2}, nil
	}
	out, err := workertest.Invoke(t, h, map[string]int{"n": 21}, map[string]string{"mode": "fast"})
	if err != nil || string(out) != `{"double":42}` {
		t.Fatalf("Invoke = %s, %v", out, err)
	}
	if seen.Run != workertest.RunID || seen.Attempt != 1 || seen.Delivery != 1 || string(seen.With) != `{"mode":"fast"}` ||
		seen.Activation != `["test-run","/states/test",1]` || seen.Node != workertest.Node {
		t.Errorf("handler saw %+v", seen)
	}
	if _, err := workertest.Invoke(t, h, map[string]int{"n": 1}, nil); err != nil || seen.With != nil {
		t.Errorf("nil with gave %q, %v", seen.With, err)
	}

	_, err = workertest.Invoke(t, h, map[string]int{"n": -1}, nil)
	if te := worker.WireError(err); te == nil || te.Code != "NEGATIVE" || !te.NonRetryable {
		t.Errorf("error maps to %+v", te)
	}
	_, err = workertest.Invoke(t, h, map[string]int{"n": 13}, nil)
	var pe *worker.PanicError
	if !errors.As(err, &pe) || pe.Value != "unlucky" {
		t.Errorf("panic gave %v", err)
	}
	_, err = workertest.Invoke(t, h, "not an object", nil)
	if te := worker.WireError(err); te == nil || !te.NonRetryable {
		t.Errorf("undecodable input gave %+v", te)
	}
}

func TestRunKeepsGivenFields(t *testing.T) {
	t.Parallel()
	inv := worker.Invocation{Run: "r9", Attempt: 3, Delivery: 2, Node: "n", Input: json.RawMessage(`7`)}
	got := workertest.Complete(inv)
	if got.Run != "r9" || got.Attempt != 3 || got.Delivery != 2 || got.Node != "n" || string(got.Input) != "7" ||
		got.Activation != `["r9","/states/test",1]` {
		t.Errorf("Complete = %+v", got)
	}
	out, err := workertest.Run(t.Context(), func(_ context.Context, inv worker.Invocation) (any, error) {
		return inv.Attempt, nil
	}, inv)
	if err != nil || string(out) != "3" {
		t.Errorf("Run = %s, %v", out, err)
	}
}

// ExampleRun tests a handler without a server.
func ExampleRun() {
	greet := func(_ context.Context, inv worker.Invocation) (any, error) {
		var in struct{ Name string }
		if err := inv.DecodeInput(&in); err != nil {
			return nil, err
		}
		if in.Name == "" {
			return nil, worker.WithCode("NO_NAME", worker.NonRetryable(errors.New("name is required")))
		}
		return map[string]string{"greeting": "Hello, " + in.Name}, nil
	}

	out, err := workertest.Run(context.Background(), greet, worker.Invocation{Input: json.RawMessage(`{"name":"Ada"}`)})
	fmt.Println(string(out), err)

	_, err = workertest.Run(context.Background(), greet, worker.Invocation{Input: json.RawMessage(`{}`)})
	te := worker.WireError(err) // what the workflow receives
	fmt.Printf("%s %s non-retryable=%v\n", te.Code, te.Message, te.NonRetryable)
	// Output:
	// {"greeting":"Hello, Ada"} <nil>
	// NO_NAME name is required non-retryable=true
}
