package run

import (
	"errors"
	"fmt"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/engine/workflow"
)

// Options are host settings that shape a run without being part of the
// workflow document.
type Options struct {
	// Retry returns the retry policy for a task version; nil, or a zero
	// MaxAttempts, means DefaultRetry.
	Retry func(task, version string) RetryPolicy

	// Timeouts returns the timeouts of a task version's attempts; nil, or
	// zero fields, means no timeout (the reference has none: its tasks
	// are local calls). The fleet always sets them, so that an attempt
	// nobody answers cannot hold a run for ever.
	Timeouts func(task, version string) Timeouts

	// Steps caps the expression evaluations of one Apply, summed over
	// every query it evaluates: guards and effects of every microstep,
	// work inputs, and the selects, queries and withs of DAG nodes. The
	// query that crosses it fails with JQ2009, as one query over its own
	// limit does, and the run fails as it then does. Default
	// query.DefaultLimits.Steps (10,000,000).
	Steps int
	// Bytes caps the bytes of strings, arrays and objects those queries
	// create in one Apply, as query.Budget accounts them (JQ2009).
	// Default query.DefaultLimits.Bytes (64 MiB).
	Bytes int

	// MaxBuffered caps the events a run holds while it is not waiting
	// (they are delivered to its next wait); one more is rejected.
	// Default 1000.
	MaxBuffered int
	// MaxBufferedBytes caps the JSON size of those events, together; an
	// event that would exceed it is rejected. The run's record holds
	// them, and must still fit a NATS message. Default 256 KiB, a quarter
	// of NATS's default max payload.
	MaxBufferedBytes int

	// FailsAtCall, when set, tells whether a task fails the moment it is
	// invoked, and with which message: the reference calls its
	// in-process handlers as their inputs arrive, so a handler that
	// throws at once fails the DAG before an inline node (query, jslt,
	// select, with) that the reference starts after it and that fails
	// too. The simulator's mocks are such handlers. Nil in the fleet,
	// whose tasks answer later than any inline node.
	FailsAtCall func(inv *Invoke) (message string, fails bool)

	// FailsAtRead, when set, tells whether a task's result fails the run
	// as it is read, and with which error: a handler the reference calls
	// in process and that returns at once a value its checkpointed node
	// refuses (JF2008) fails the DAG one turn after the call, before an
	// inline node that the reference reaches later in the same step
	// fails too (dag.Wave.FailsAtRead). The simulator's mocks are such
	// handlers. Nil in the fleet, whose results come in later inputs.
	FailsAtRead func(inv *Invoke) error
}

// Buffer defaults.
const (
	DefaultMaxBuffered      = 1000
	DefaultMaxBufferedBytes = 256 << 10
)

// Apply applies one message to a run. st is nil for a run that does not
// exist yet (only a start message may create one). It returns the new
// state and the effects the host must carry out after saving it; it never
// modifies st. A message that cannot apply returns an error wrapping
// ErrRejected and no state. A message that makes the run fail is not an
// error: the new state is failed and says why.
func Apply(wf *workflow.Workflow, st *State, msg Message, opts Options) (*State, []Effect, error) {
	if msg.Kind == KindStart {
		if st != nil {
			return nil, nil, reject("run %q already exists", st.RunID)
		}
		return start(wf, msg, opts)
	}
	if st == nil {
		return nil, nil, reject("no such run")
	}
	if msg.Kind == KindRedrive && st.Status != StatusFailed {
		return nil, nil, reject("run %q is %s: only a failed run can be redriven", st.RunID, st.Status)
	}
	if st.Status.Terminal() && msg.Kind != KindRedrive {
		return nil, nil, reject("run %q is %s", st.RunID, st.Status)
	}
	if !msg.NoTime && (msg.Time != msg.Time || msg.Time < st.Control.Time) {
		return nil, nil, fault.NoPath(fault.JF2011, "workflow time must be finite and cannot move backwards")
	}
	if next, effects, handled, err := operate(wf, st, msg, opts); handled {
		return next, effects, err
	}
	r := newReducer(wf, st, msg, opts)
	var err error
	switch msg.Kind {
	case KindEvent:
		err = r.event(msg.Event)
	case KindWake:
		err = r.wake()
	case KindTimer:
		err = r.timer(msg.Timer)
	case KindResult:
		err = r.result(msg.Result)
	case KindCancel:
		r.cancel()
	case KindPostpone:
		err = r.postpone(msg.Postpone)
	case KindRedrive:
		err = r.redrive()
	default:
		return nil, nil, reject("unknown message kind %q", msg.Kind)
	}
	if err != nil {
		if errors.Is(err, ErrRejected) {
			return nil, nil, err
		}
		r.fail(err)
	}
	return r.finish()
}

func reject(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRejected, fmt.Sprintf(format, args...))
}

func start(wf *workflow.Workflow, msg Message, opts Options) (*State, []Effect, error) {
	input := value.Clone(msg.Input)
	seed := &State{
		RunID:   msg.RunID,
		Status:  StatusRunning,
		Context: Context{Input: input, Data: input, Results: map[string]any{}, Visits: map[string]any{}},
	}
	if msg.NoTime {
		msg.Time = 0
	}
	r := newReducer(wf, seed, msg, opts)
	r.prev = nil
	res, err := wf.Chart.Start(r.startOpts(msg.Time, r.contextValue()))
	if err != nil {
		return nil, nil, err
	}
	r.st.Control = res.State
	if res.Final {
		r.st.Status = StatusDone
	}
	if err := r.admit(res.Entered); err != nil {
		r.fail(err)
		return r.finish()
	}
	r.persist()
	if msg.Event != nil {
		// The reference's first call may carry an event for the first wait.
		r.st.Buffered = append(r.st.Buffered, *msg.Event)
	}
	if err := r.drive(); err != nil {
		r.fail(err)
	}
	return r.finish()
}
