package step

import (
	"errors"
	"fmt"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/wire"
)

// Rewind is Step's outcome for a reset it could not refuse on the record
// alone: the caller rebuilds the run as it was after input ResetTo from
// the run's own history (replay.Rewind) and finishes the step with Reset.
const Rewind Outcome = "rewind"

// ResetTo is the input sequence a reset input takes its run back to (0
// for any other input).
func (in *Input) ResetTo() uint64 { return in.resetTo }

func (in *Input) parseReset(data []byte) error {
	var body wire.Reset
	if err := strictJSON(data, &body); err != nil {
		return malformed("reset body: %v", err)
	}
	if body.To == 0 {
		return malformed("reset body: to is missing or 0 (the stream sequence of the input whose state the run goes back to)")
	}
	in.msg.Kind, in.msg.Reason, in.msg.Operator, in.resetTo = run.KindReset, body.Reason, body.Operator, body.To
	return nil
}

// resetPoint refuses what a reset's record already tells: a paused run
// (as run.Reset would), or a point that is not before the reset itself.
// Anything else needs the history: Rewind.
func resetPoint(s Settings, cur Run, in *Input, seq uint64, now float64) Result {
	var why error
	switch {
	case cur.State.Status == run.StatusPaused:
		why = fmt.Errorf("run %q is paused: resume it first (a reset would drop the inputs it holds)", in.RunID)
	case in.resetTo >= seq:
		why = fmt.Errorf("input seq %d is not before the reset (seq %d): a reset goes back to one of the run's earlier inputs", in.resetTo, seq)
	}
	if why != nil {
		return refuse(s, cur, in, seq, now, fmt.Errorf("%w: %w", run.ErrRejected, why))
	}
	return Result{Run: cur, Outcome: Rewind}
}

// Reset finishes the step of a reset input at seq that Step answered
// with Rewind (cur is that result's run). at is the run's state after
// input in.ResetTo(), rebuilt from its history (Line.Point); why, when not nil, is why no such point can be
// continued from (it is not an input the run took, a reset superseded
// it, the history lost it): the reset is refused with it and recorded.
// The new state is at, continued at now (run.Reset); the record keeps
// cur's books, so that every input, superseded ones included, stays
// applied once. Errors are those of defs.
func Reset(s Settings, cur Run, in *Input, seq uint64, now float64, defs Definitions, at *run.State, why error) (Result, error) {
	if cur.State != nil && cur.State.Control.Time > now {
		now = cur.State.Control.Time
	}
	if why == nil && (cur.State == nil || at == nil) {
		why = errors.New("no state to go back to")
	}
	if why != nil {
		return refuse(s, cur, in, seq, now, fmt.Errorf("%w: %w", run.ErrRejected, why)), nil
	}
	def, err := defs.Definition(at.Workflow, at.Revision)
	if err != nil {
		return Result{Run: cur}, err
	}
	e, ok := def.Program.(Engine)
	if !ok {
		return Result{Run: cur, Outcome: Failed, Reason: fmt.Errorf("%w: revision %s of workflow %s has no engine to reset a run with", ErrPermanent, def.Revision, def.Name)}, nil
	}
	msg := in.msg
	msg.Time = now
	next, effects, err := safeReset(e, cur.State, at, msg)
	if errors.Is(err, run.ErrRejected) {
		return refuse(s, cur, in, seq, now, err), nil
	}
	if err != nil {
		return Result{Run: cur, Outcome: Failed, Reason: fmt.Errorf("%w: reducer: %w", ErrPermanent, err)}, nil
	}
	return commit(s, def, in, seq, now, cur, next, effects), nil
}

func safeReset(e Engine, cur, at *run.State, msg run.Message) (next *run.State, effects []run.Effect, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: reducer panic: %v", ErrPermanent, r)
		}
	}()
	return run.Reset(e.Workflow, cur, at, msg, e.Options)
}
