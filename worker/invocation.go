package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// Invocation is one call of a task, as the handler receives it.
type Invocation struct {
	// Run is the workflow run's id.
	Run string
	// Activation identifies the work state's visit within the run. With
	// Node it names one task execution: it is the same for every attempt
	// and every redelivery of that execution and differs between loop
	// iterations, so (Activation, Node) is the idempotency key to give
	// external systems; see IdempotencyKey.
	Activation string
	// State is the work state's id (a JSON Pointer into the workflow).
	State string
	// Node is the task node's id within the state.
	Node string
	// Task and Version name the task version being served.
	Task    string
	Version string
	// Attempt counts attempts of this execution, from 1. A retry after a
	// task error is a new attempt.
	Attempt int
	// Delivery counts NATS deliveries of this attempt, from 1; above 1 a
	// previous delivery was lost (a worker crashed or stopped) and the
	// attempt may already have had effects.
	Delivery uint64
	// Input is the task's input as JSON (null when it has none).
	Input json.RawMessage
	// With is the node's "with" argument as JSON, nil when it has none.
	With json.RawMessage
	// Deadline is when the dispatchers fail the attempt with TASK_TIMEOUT
	// unless its result is accepted first (the task's attemptTimeout,
	// docs/POLICY.md); zero when none applies. The handler's context ends
	// a little after it: a result after it is refused anyway.
	Deadline time.Time
}

// DecodeInput decodes Input into v. A failure is non-retryable: the same
// input fails the same way on every attempt.
func (inv Invocation) DecodeInput(v any) error {
	if err := decodeJSON(inv.Input, v); err != nil {
		return NonRetryable(fmt.Errorf("decoding task input: %w", err))
	}
	return nil
}

// DecodeWith decodes With into v (a missing With decodes as null). A
// failure is non-retryable.
func (inv Invocation) DecodeWith(v any) error {
	if err := decodeJSON(inv.With, v); err != nil {
		return NonRetryable(fmt.Errorf("decoding task argument \"with\": %w", err))
	}
	return nil
}

// IdempotencyKey returns a key that is the same for every attempt and
// redelivery of this task execution and unique otherwise: the JSON array
// [Activation, Node].
func (inv Invocation) IdempotencyKey() string {
	b, _ := json.Marshal([2]string{inv.Activation, inv.Node})
	return string(b)
}

func decodeJSON(data json.RawMessage, v any) error {
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	return json.Unmarshal(data, v)
}

// errMalformed is wrapped by every refusal of an invocation message.
var errMalformed = errors.New("malformed invocation")

// parseInvocation decodes and checks an invocation message body delivered
// for the task version task/version. Unknown fields are ignored so that a
// newer dispatcher can add some.
func parseInvocation(body []byte, names subjects.Names, task, version string) (*wire.Invocation, error) {
	var w wire.Invocation
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("%w: body is not a JSON invocation object: %w", errMalformed, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: body holds more than one JSON value", errMalformed)
	}
	if err := subjects.CheckRunID(w.Run); err != nil {
		return nil, fmt.Errorf("%w: %w", errMalformed, err)
	}
	switch {
	case w.Activation == "":
		return nil, fmt.Errorf("%w: activation is missing", errMalformed)
	case w.Node == "":
		return nil, fmt.Errorf("%w: node is missing", errMalformed)
	case w.Task != task || w.Version != version:
		return nil, fmt.Errorf("%w: it names task %q version %q but was delivered for task %q version %q", errMalformed, w.Task, w.Version, task, version)
	case w.Attempt < 1:
		return nil, fmt.Errorf("%w: attempt %d is below 1", errMalformed, w.Attempt)
	case w.Token == "":
		return nil, fmt.Errorf("%w: token is missing", errMalformed)
	case w.Reply != names.Result(w.Run):
		// Results go to the run's result subject and nowhere else, so a
		// forged invocation cannot make a worker publish elsewhere.
		return nil, fmt.Errorf("%w: reply %q is not the result subject %q of run %q", errMalformed, w.Reply, names.Result(w.Run), w.Run)
	}
	if len(w.Input) == 0 {
		w.Input = json.RawMessage("null")
	}
	return &w, nil
}

func invocationOf(w *wire.Invocation, delivery uint64) Invocation {
	return Invocation{
		Run: w.Run, Activation: w.Activation, State: w.State, Node: w.Node,
		Task: w.Task, Version: w.Version, Attempt: w.Attempt, Delivery: delivery,
		Input: w.Input, With: w.With, Deadline: deadlineOf(w),
	}
}

// deadlineOf is an invocation's deadline as a time, zero when it has none.
func deadlineOf(w *wire.Invocation) time.Time {
	if w.Deadline <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(w.Deadline))
}

// deadlineSkew is how much later than its deadline a worker still runs an
// attempt: the deadline is in the dispatchers' stream time, which may run
// ahead of the worker's clock.
const deadlineSkew = 2 * time.Second

// ParseInvocation decodes and checks an invocation message body delivered
// by the consumer of task version task/version, as this SDK does before
// running a handler: the errors it returns are the reasons to terminate the
// message with (PROTOCOL.md section 5.3). Programs that hand invocations
// on to workers of their own, such as the HTTP gateway, check them with it.
func ParseInvocation(body []byte, names subjects.Names, task, version string) (*wire.Invocation, error) {
	return parseInvocation(body, names, task, version)
}
