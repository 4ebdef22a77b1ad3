package dispatcher

import (
	"errors"
	"fmt"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// transition is what one input does to a run's record.
type transition struct {
	// rec is the record to save; nil when the reducer rejected an input
	// for a run that has no record.
	rec *Record
	// state is the run's state after the input (the old one if rejected).
	state *run.State
	// status is the status the input announces, if any.
	status *wire.Status
	// rejected wraps run.ErrRejected when the reducer refused the input.
	rejected error
	// ignored are the events the input's step consumed without effect.
	ignored []run.Ignored
}

// transit computes the record after the input at seq with stream time
// now, from prev and its decoded state st (both nil before the start). It
// does no I/O: the dispatcher saves what it returns, and a replay
// (Replayer) calls it on the run's history, so that both take exactly the
// same path. Errors wrap errPermanent.
func transit(cfg Config, def *definition, in *input, seq uint64, now float64, prev *Record, st *run.State) (transition, error) {
	if st != nil && st.Control.Time > now {
		// Stream time is not monotonic across leader changes, and the
		// reducer refuses time that moves backwards.
		now = st.Control.Time
	}
	msg := in.msg
	msg.Time = now
	var next *run.State
	var effects []run.Effect
	var err error
	if in.refused != nil {
		// Malformed, but addressed to this run: its refusal is recorded
		// where status and history show it.
		err = fmt.Errorf("%w: %w", run.ErrRejected, in.refused)
	} else {
		next, effects, err = screenAndApply(cfg, def, in, st, msg)
	}
	if errors.Is(err, run.ErrRejected) {
		t := transition{state: st, rejected: err}
		if prev != nil {
			t.rec = prev.refused(Rejection{Seq: seq, Kind: in.kind, Reason: err.Error(), Time: now}, cfg.RejectedHistory)
		}
		return t, nil
	}
	if err != nil {
		return transition{}, fmt.Errorf("%w: reducer: %w", errPermanent, err)
	}
	if next == nil {
		return transition{}, fmt.Errorf("%w: reducer returned no state", errPermanent)
	}
	if next.Workflow == "" {
		next.Workflow = def.name
	}
	if next.Revision == "" {
		next.Revision = def.revision
	}
	out, status, err := render(cfg.Names, cfg.Tokens, in.runID, next, effects, now)
	if err != nil {
		return transition{}, fmt.Errorf("%w: %w", errPermanent, err)
	}
	state, err := encodeState(next)
	if err != nil {
		return transition{}, fmt.Errorf("%w: encode state: %w", errPermanent, err)
	}
	rec := prev.next(seq, cfg.AppliedHistory)
	rec.State, rec.Outbox = state, out
	rec.Timers = rec.Timers || armsTimer(out)
	for _, ig := range next.Ignored {
		rec.Ignored = appendBounded(rec.Ignored, Rejection{Seq: seq, Kind: subjects.KindEvent, Reason: ig.Reason, Time: now}, cfg.RejectedHistory)
	}
	if status != nil {
		rec.Status, rec.statusJSON = status, announced(out)
	}
	return transition{rec: rec, state: next, status: status, ignored: next.Ignored}, nil
}
