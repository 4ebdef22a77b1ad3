// Package workertest runs jetflow task handlers the way a worker does
// (panics become errors, outputs are encoded as JSON) but without a NATS
// server, so that handlers can be unit tested.
package workertest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jetflow/jetflow/worker"
)

// Defaults of the invocations Run and Invoke build.
const (
	RunID   = "test-run"
	State   = "/states/test"
	Node    = "test"
	Task    = "test"
	Version = "1"
)

// Invoke runs h once on an invocation of input and with (nil with means
// the node has none), as a worker would. It returns the output as the
// worker would publish it, JSON-encoded, and h's error (wrapped errors
// are kept, so errors.Is and worker.WireError work on it). It fails the
// test if input or with cannot be encoded.
func Invoke(t testing.TB, h worker.Handler, input, with any) (json.RawMessage, error) {
	t.Helper()
	in, err := json.Marshal(input)
	if err != nil {
		t.Fatalf("workertest: encoding the input: %v", err)
	}
	inv := worker.Invocation{Input: in}
	if with != nil {
		if inv.With, err = json.Marshal(with); err != nil {
			t.Fatalf("workertest: encoding the with argument: %v", err)
		}
	}
	return Run(t.Context(), h, inv)
}

// Run runs h once on inv, as a worker would. Fields of inv left empty get
// the package's defaults: run RunID, state State, node Node, task Task,
// version Version, attempt 1, delivery 1, input null, and the activation
// key of the state's first visit.
func Run(ctx context.Context, h worker.Handler, inv worker.Invocation) (json.RawMessage, error) {
	return worker.Execute(ctx, h, Complete(inv))
}

// Complete returns inv with the defaults Run applies.
func Complete(inv worker.Invocation) worker.Invocation {
	if inv.Run == "" {
		inv.Run = RunID
	}
	if inv.State == "" {
		inv.State = State
	}
	if inv.Activation == "" {
		key, _ := json.Marshal([]any{inv.Run, inv.State, 1})
		inv.Activation = string(key)
	}
	if inv.Node == "" {
		inv.Node = Node
	}
	if inv.Task == "" {
		inv.Task = Task
	}
	if inv.Version == "" {
		inv.Version = Version
	}
	if inv.Attempt == 0 {
		inv.Attempt = 1
	}
	if inv.Delivery == 0 {
		inv.Delivery = 1
	}
	if len(inv.Input) == 0 {
		inv.Input = json.RawMessage("null")
	}
	return inv
}
