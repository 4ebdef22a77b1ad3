package step

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// parseOperation reads an operator's pause, resume or terminate request.
// A terminate must say why: the reason is what its status shows.
func (in *Input) parseOperation(kind string, data []byte) error {
	var body wire.Operation
	if len(bytes.TrimSpace(data)) > 0 {
		if err := strictJSON(data, &body); err != nil {
			return malformed("%s body: %v", kind, err)
		}
	}
	if kind == subjects.KindTerminate && strings.TrimSpace(body.Reason) == "" {
		return malformed("terminate body: reason is empty (a terminate says why the run was ended)")
	}
	in.msg.Kind, in.msg.Reason, in.msg.Operator = run.Kind(kind), body.Reason, body.Operator
	return nil
}

func (in *Input) parsePostpone(data []byte) error {
	var body wire.Postpone
	if err := strictJSON(data, &body); err != nil {
		return malformed("postpone body: %v", err)
	}
	if err := subjects.CheckTask(body.Task); err != nil {
		return fmt.Errorf("%w: postpone body: %w", ErrMalformed, err)
	}
	if err := subjects.CheckVersion(body.Version); err != nil {
		return fmt.Errorf("%w: postpone body: %w", ErrMalformed, err)
	}
	in.msg.Kind, in.msg.Postpone = run.KindPostpone, &run.Postpone{Task: body.Task, Version: body.Version}
	return nil
}

// DeadlineFire reports whether the input is a fire of a run's deadline
// timer (run.DeadlineTimer).
func (in *Input) DeadlineFire() bool {
	return in.msg.Kind == run.KindTimer && in.msg.Timer != nil && in.msg.Timer.ID == run.DeadlineTimer
}

// DueAt returns the task versions whose attempts the input would fail
// if it is a deadline fire applied to st at stream time now (see
// run.DueTasks), nil for any other input or a stale fire. A dispatcher
// asks it before applying a fire, to postpone the attempts of a paused
// task version instead.
func DueAt(def *Definition, st *run.State, in *Input, now float64) []run.TaskVersion {
	t := in.msg.Timer
	if !in.DeadlineFire() || st == nil || st.Deadline != t.Deadline {
		return nil
	}
	e, ok := def.Program.(Engine)
	if !ok {
		return nil
	}
	return run.DueTasks(e.Workflow, st, max(now, t.Deadline))
}

// Closes returns the task version a result input asks to close and for
// how long (its error's closeTask with retryAfterMs), when st's work in
// flight is what it answers; ok false for any other input. A dispatcher
// asks it after the result applied, and pauses the task version's
// consumer that long (docs/POLICY.md#retry-after).
func Closes(def *Definition, st *run.State, in *Input) (tv run.TaskVersion, d time.Duration, ok bool) {
	res := in.msg.Result
	if !in.closeTask || res == nil || res.Error == nil || res.Error.RetryAfterMs <= 0 || def == nil {
		return tv, 0, false
	}
	e, isEngine := def.Program.(Engine)
	if !isEngine {
		return tv, 0, false
	}
	tv, ok = run.TaskOf(e.Workflow, st, res.Activation, res.Node)
	ms := min(res.Error.RetryAfterMs, run.MaxRetryAfterMs)
	return tv, time.Duration(ms * float64(time.Millisecond)), ok
}
