package worker

import (
	"errors"
	"fmt"
	"time"

	"github.com/jetflow/jetflow/wire"
)

// ErrStopped is the cancellation cause of a handler's context when the
// worker stops before the handler returns. The invocation is then handed
// back to NATS for redelivery instead of being reported as failed.
var ErrStopped = errors.New("worker stopped")

// NonRetryable marks err so that the task's remaining attempts are skipped:
// the failure reaches the workflow at once. It returns nil for a nil err.
func NonRetryable(err error) error {
	if err == nil {
		return nil
	}
	return &taskError{err: err, nonRetryable: true}
}

// WithCode attaches code to err; the workflow's retry policy can name
// codes that are not retried. An outer code wins over an inner one. It
// returns nil for a nil err.
func WithCode(code string, err error) error {
	if err == nil {
		return nil
	}
	return &taskError{err: err, code: code}
}

// RetryAfter marks err as a failure to retry after d (an upstream's
// "retry after", such as an HTTP 429 response's Retry-After): the next
// attempt waits d instead of the retry policy's backoff, which it does
// not advance. The attempt still counts against maxAttempts; d is capped
// at 24 h. It returns nil for a nil err, err for d <= 0.
func RetryAfter(d time.Duration, err error) error {
	if err == nil || d <= 0 {
		return err
	}
	return &taskError{err: err, retryAfter: d}
}

// CloseTask is RetryAfter that also closes the task version for d: the
// dispatchers pause its consumer until then (docs/POLICY.md#retry-after),
// so no worker gets any invocation of it, not only this one's retry.
// A pause already lasting longer is kept. It returns nil for a nil err,
// err for d <= 0.
func CloseTask(d time.Duration, err error) error {
	if err == nil || d <= 0 {
		return err
	}
	return &taskError{err: err, retryAfter: d, closeTask: true}
}

// taskError is the wrapper NonRetryable, WithCode, RetryAfter and
// CloseTask add; its message is the wrapped error's, so wrapping never
// changes what the workflow sees.
type taskError struct {
	err          error
	code         string
	nonRetryable bool
	retryAfter   time.Duration
	closeTask    bool
}

func (e *taskError) Error() string { return e.err.Error() }
func (e *taskError) Unwrap() error { return e.err }

// PanicError is the error a handler's panic becomes.
type PanicError struct {
	// Value is what the handler panicked with.
	Value any
	// Stack is the goroutine's stack at the panic.
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("task handler panicked: %v", e.Value) }

// WireError maps a handler's error to the task error a worker reports: the
// message is err.Error(), the code is the outermost WithCode's, and it is
// non-retryable if NonRetryable marked any error in the chain; the
// outermost RetryAfter or CloseTask sets retryAfterMs (and closeTask). It returns
// nil for a nil err.
func WireError(err error) *wire.TaskError {
	if err == nil {
		return nil
	}
	te := &wire.TaskError{Message: err.Error()}
	if te.Message == "" {
		te.Message = fmt.Sprintf("task failed with an empty %T error", err)
	}
	walk(err, func(e error) {
		if t, ok := e.(*taskError); ok { //nolint:errorlint // walk visits every error of the chain: this one, not one below it
			if te.Code == "" {
				te.Code = t.code
			}
			te.NonRetryable = te.NonRetryable || t.nonRetryable
			if te.RetryAfterMs == 0 && t.retryAfter > 0 {
				te.RetryAfterMs = float64(t.retryAfter.Milliseconds())
				te.CloseTask = t.closeTask
			}
		}
	})
	return te
}

// walk visits err and every error it wraps, depth first, outermost first,
// following both forms of Unwrap.
func walk(err error, visit func(error)) {
	for err != nil {
		visit(err)
		switch u := err.(type) { //nolint:errorlint // how err unwraps, not what it wraps
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e, visit)
			}
			return
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		default:
			return
		}
	}
}
