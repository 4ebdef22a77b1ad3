// Package exec serves a jetflow task with any program. For every
// invocation it starts the program, writes the invocation as one JSON
// object on its stdin and reads the task's output as one JSON value from
// its stdout. A non-zero exit fails the attempt with the end of the
// program's stderr as the message; cancelling the handler's context kills
// the program and every process it started. When the worker traces, the
// program gets the attempt's span as TRACEPARENT in its environment.
package exec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"time"

	"github.com/jetflow/jetflow/tracing"
	"github.com/jetflow/jetflow/worker"
)

// Request is the JSON object a program reads on stdin.
type Request struct {
	Run        string `json:"run"`
	Activation string `json:"activation"`
	State      string `json:"state"`
	Node       string `json:"node"`
	Task       string `json:"task"`
	Version    string `json:"version"`
	Attempt    int    `json:"attempt"`
	Delivery   uint64 `json:"delivery"`
	// IdempotencyKey is the same for every attempt of this task execution;
	// pass it to external systems that deduplicate.
	IdempotencyKey string          `json:"idempotencyKey"`
	Input          json.RawMessage `json:"input"`
	// With is null when the node has no "with".
	With json.RawMessage `json:"with"`
}

// Options adjust how the program runs.
type Options struct {
	// Dir is the program's working directory. Default: the worker's.
	Dir string
	// Env is added to the worker's environment, as "KEY=value" entries.
	// Default: none.
	Env []string
	// Stderr also receives everything the program writes on stderr, for
	// example os.Stderr. Default: nil.
	Stderr io.Writer
	// StderrTail is how many bytes from the end of stderr a failure
	// reports. Default: 2048.
	StderrTail int
	// MaxOutput caps stdout in bytes; a program writing more fails the
	// attempt. Default: 8 MiB.
	MaxOutput int
	// WaitDelay bounds how long the handler waits for the program's
	// output to close after it exits or is killed (a background process
	// can hold it open). Default: 5s.
	WaitDelay time.Duration
}

// Defaults of Options.
const (
	DefaultStderrTail = 2048
	DefaultMaxOutput  = 8 << 20
	DefaultWaitDelay  = 5 * time.Second
)

// Error codes of the task errors a program's failure becomes (besides
// "EXIT_<status>" for a non-zero exit status), for retry policies.
const (
	CodeKilled    = "KILLED"     // terminated by a signal it did not handle
	CodeBadOutput = "BAD_OUTPUT" // stdout is not exactly one JSON value
)

// ExitRetryAfter is the exit status (sysexits' EX_TEMPFAIL) of a
// program asking for its attempt to be retried after a delay of its own:
// it writes {"retryAfterMs": N} on stdout, with "closeTask": true to close
// the task version for as long (worker.RetryAfter, worker.CloseTask).
// Without a valid delay on stdout it is an ordinary failure, EXIT_75.
const ExitRetryAfter = 75

// retryAfter marks failed with the delay a program that exited with
// ExitRetryAfter wrote on stdout, if any.
func retryAfter(stdout *capped, failed error) error {
	raw, err := stdout.value()
	if err != nil {
		return failed
	}
	var ask struct {
		RetryAfterMs float64 `json:"retryAfterMs"`
		CloseTask    bool    `json:"closeTask"`
	}
	if json.Unmarshal(raw, &ask) != nil || ask.RetryAfterMs <= 0 {
		return failed
	}
	d := time.Duration(ask.RetryAfterMs * float64(time.Millisecond))
	if ask.CloseTask {
		return worker.CloseTask(d, failed)
	}
	return worker.RetryAfter(d, failed)
}

// Handler returns a handler that runs cmd (program and arguments) once
// per invocation. The program is looked up now, so a missing program is
// reported before the worker starts.
func Handler(cmd []string, opts Options) (worker.Handler, error) {
	if len(cmd) == 0 || cmd[0] == "" {
		return nil, errors.New("exec: no program given")
	}
	path, err := osexec.LookPath(cmd[0])
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	if opts.StderrTail <= 0 {
		opts.StderrTail = DefaultStderrTail
	}
	if opts.MaxOutput <= 0 {
		opts.MaxOutput = DefaultMaxOutput
	}
	if opts.WaitDelay <= 0 {
		opts.WaitDelay = DefaultWaitDelay
	}
	args := append([]string(nil), cmd[1:]...)
	// The program inherits the worker's environment plus opts.Env, as
	// exec.Cmd's default inherits it: handed on unread, not configuration.
	env := append(os.Environ(), opts.Env...) //nolint:forbidigo // handed on to the program unread
	return func(ctx context.Context, inv worker.Invocation) (any, error) {
		return run(ctx, path, args, env, opts, inv)
	}, nil
}

func run(ctx context.Context, path string, args, env []string, opts Options, inv worker.Invocation) (any, error) {
	with := inv.With
	if len(with) == 0 {
		with = json.RawMessage("null")
	}
	stdin, err := json.Marshal(Request{
		Run: inv.Run, Activation: inv.Activation, State: inv.State, Node: inv.Node,
		Task: inv.Task, Version: inv.Version, Attempt: inv.Attempt, Delivery: inv.Delivery,
		IdempotencyKey: inv.IdempotencyKey(), Input: inv.Input, With: with,
	})
	if err != nil {
		return nil, worker.NonRetryable(fmt.Errorf("exec: encoding the request: %w", err))
	}
	stdout := &capped{max: opts.MaxOutput}
	stderr := &tail{max: opts.StderrTail}
	c := osexec.CommandContext(ctx, path, args...)
	if tp := tracing.Traceparent(ctx); tp != "" {
		// The attempt's span, for a program that traces its own work
		// (OpenTelemetry's environment carrier).
		env = append(env[:len(env):len(env)], "TRACEPARENT="+tp)
	}
	c.Dir, c.Env = opts.Dir, env
	c.Stdin = bytes.NewReader(stdin)
	c.Stdout = stdout
	c.Stderr = stderr
	if opts.Stderr != nil {
		c.Stderr = io.MultiWriter(stderr, opts.Stderr)
	}
	c.WaitDelay = opts.WaitDelay
	killGroupOnCancel(c)

	err = c.Run()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("exec: %s killed: %w", path, context.Cause(ctx))
	}
	var exit *osexec.ExitError
	switch {
	case errors.As(err, &exit) && exit.Exited():
		failed := worker.WithCode(fmt.Sprintf("EXIT_%d", exit.ExitCode()),
			fmt.Errorf("%s exited with status %d: %s", path, exit.ExitCode(), stderr.text()))
		if exit.ExitCode() == ExitRetryAfter {
			failed = retryAfter(stdout, failed)
		}
		return nil, failed
	case errors.As(err, &exit):
		return nil, worker.WithCode(CodeKilled, fmt.Errorf("%s: %v: %s", path, exit.ProcessState, stderr.text()))
	case errors.Is(err, osexec.ErrWaitDelay):
		return nil, worker.WithCode(CodeBadOutput, fmt.Errorf("%s exited but its output stayed open for %v (a background process holds stdout or stderr)", path, opts.WaitDelay))
	case err != nil:
		return nil, fmt.Errorf("exec: running %s: %w", path, err)
	}
	out, err := stdout.value()
	if err != nil {
		return nil, worker.WithCode(CodeBadOutput, fmt.Errorf("%s: %w", path, err))
	}
	return out, nil
}
