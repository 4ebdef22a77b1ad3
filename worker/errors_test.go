package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

type emptyErr struct{}

func (emptyErr) Error() string { return "" }

func TestWireError(t *testing.T) {
	t.Parallel()
	base := errors.New("boom")
	cases := []struct {
		name string
		err  error
		want *wire.TaskError
	}{
		{"nil", nil, nil},
		{"plain", base, &wire.TaskError{Message: "boom"}},
		{"non-retryable", worker.NonRetryable(base), &wire.TaskError{Message: "boom", NonRetryable: true}},
		{"code", worker.WithCode("C", base), &wire.TaskError{Message: "boom", Code: "C"}},
		{"outer code wins", worker.WithCode("OUT", worker.WithCode("IN", base)), &wire.TaskError{Message: "boom", Code: "OUT"}},
		{"deep flag", fmt.Errorf("a: %w", fmt.Errorf("b: %w", worker.NonRetryable(base))), &wire.TaskError{Message: "a: b: boom", NonRetryable: true}},
		{"joined", errors.Join(base, worker.WithCode("J", worker.NonRetryable(errors.New("x")))), &wire.TaskError{Message: "boom\nx", Code: "J", NonRetryable: true}},
		{"empty message", emptyErr{}, &wire.TaskError{Message: "task failed with an empty worker_test.emptyErr error"}},
		{"panic", &worker.PanicError{Value: 7}, &wire.TaskError{Message: "task handler panicked: 7"}},
		{"retry after", worker.RetryAfter(1500*time.Millisecond, base), &wire.TaskError{Message: "boom", RetryAfterMs: 1500}},
		{"close task", worker.WithCode("RATE", worker.CloseTask(time.Minute, base)), &wire.TaskError{Message: "boom", Code: "RATE", RetryAfterMs: 60000, CloseTask: true}},
		{"outer retry after wins", worker.RetryAfter(time.Second, worker.CloseTask(time.Minute, base)), &wire.TaskError{Message: "boom", RetryAfterMs: 1000}},
		{"no delay", worker.RetryAfter(0, base), &wire.TaskError{Message: "boom"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := worker.WireError(c.err)
			if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
				t.Fatalf("WireError = %+v, want %+v", got, c.want)
			}
		})
	}
	if worker.NonRetryable(nil) != nil || worker.WithCode("C", nil) != nil {
		t.Error("wrapping nil is not nil")
	}
	if !errors.Is(worker.WithCode("C", worker.NonRetryable(base)), base) {
		t.Error("the wrappers hide the cause from errors.Is")
	}
}

func TestExecute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name    string
		h       worker.Handler
		out     string
		errPart string
		final   bool
	}{
		{"value", func(context.Context, worker.Invocation) (any, error) { return map[string]int{"a": 1}, nil }, `{"a":1}`, "", false},
		{"nil", func(context.Context, worker.Invocation) (any, error) { return nil, nil }, `null`, "", false},
		{"raw", func(context.Context, worker.Invocation) (any, error) { return json.RawMessage(` [1, 2] `), nil }, `[1,2]`, "", false},
		{"bad raw", func(context.Context, worker.Invocation) (any, error) { return json.RawMessage(`{`), nil }, "", "task output is not JSON", true},
		{"channel", func(context.Context, worker.Invocation) (any, error) { return make(chan int), nil }, "", "task output is not JSON", true},
		{"error wins over output", func(context.Context, worker.Invocation) (any, error) { return 1, errors.New("no") }, "", "no", false},
		{"panic", func(context.Context, worker.Invocation) (any, error) { panic(errors.New("kaput")) }, "", "task handler panicked: kaput", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, err := worker.Execute(ctx, c.h, worker.Invocation{})
			if c.errPart == "" {
				if err != nil || string(out) != c.out {
					t.Fatalf("Execute = %s, %v; want %s", out, err, c.out)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.errPart) || out != nil {
				t.Fatalf("Execute = %s, %v; want an error with %q", out, err, c.errPart)
			}
			if got := worker.WireError(err).NonRetryable; got != c.final {
				t.Errorf("non-retryable = %v, want %v", got, c.final)
			}
		})
	}
	var pe *worker.PanicError
	_, err := worker.Execute(ctx, func(context.Context, worker.Invocation) (any, error) { panic("x") }, worker.Invocation{})
	if !errors.As(err, &pe) || pe.Value != "x" || !strings.Contains(string(pe.Stack), "TestExecute") {
		t.Errorf("panic error = %#v", err)
	}
}

func TestInvocationHelpers(t *testing.T) {
	t.Parallel()
	inv := worker.Invocation{Activation: `["r","/s",1]`, Node: "n/1", Input: json.RawMessage(`{"a":1}`)}
	if got := inv.IdempotencyKey(); got != `["[\"r\",\"/s\",1]","n/1"]` {
		t.Errorf("IdempotencyKey = %s", got)
	}
	other := inv
	other.Attempt = 3
	if other.IdempotencyKey() != inv.IdempotencyKey() {
		t.Error("the key depends on the attempt")
	}
	other.Node = "n"
	if other.IdempotencyKey() == inv.IdempotencyKey() {
		t.Error("two nodes share a key")
	}
	var v struct{ A int }
	if err := inv.DecodeInput(&v); err != nil || v.A != 1 {
		t.Errorf("DecodeInput = %+v, %v", v, err)
	}
	var w any = "untouched"
	if err := inv.DecodeWith(&w); err != nil || w != nil {
		t.Errorf("DecodeWith of no with = %v, %v; want nil", w, err)
	}
	var n int
	err := inv.DecodeInput(&n)
	if err == nil || !worker.WireError(err).NonRetryable {
		t.Errorf("a failed decode = %v, want a non-retryable error", err)
	}
}

func TestResultMsgID(t *testing.T) {
	t.Parallel()
	// docs/PROTOCOL.md and examples/workers/node compute the same: the hex
	// SHA-256 of the token's bytes ("printf %s v1.abc | sha256sum").
	const want = "result/80ab1d43ea4adc8cb9adb8515291f6968b23e884bb56e6c417739eae713b23e6"
	if got := worker.ResultMsgID("v1.abc"); got != want {
		t.Errorf("ResultMsgID = %q, want %q", got, want)
	}
	if worker.ResultMsgID("v1.abd") == worker.ResultMsgID("v1.abc") {
		t.Error("two tokens share a result id")
	}
}
