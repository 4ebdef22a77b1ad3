package step

import (
	"errors"
	"fmt"

	"github.com/jetflow/jetflow/engine/run"
)

// startWithEvent applies a start that carries an event (signal with
// start), in one step so that no one sees the run without the event: on
// a run that does not exist, the start and then the event; on a run that
// exists and has not ended, the event alone. st is the run's state, nil
// before its start.
func startWithEvent(def *Definition, in *Input, st *run.State, msg run.Message) (*run.State, []run.Effect, error) {
	ev := run.Message{Kind: run.KindEvent, Time: msg.Time, RunID: msg.RunID, Event: in.startEvent}
	if st != nil {
		if st.Workflow != in.Start.Workflow {
			return nil, nil, fmt.Errorf("%w: run %q exists and runs workflow %s, not %s: its event is not delivered", run.ErrRejected, st.RunID, st.Workflow, in.Start.Workflow)
		}
		return safeApply(def.Program, st, ev)
	}
	next, effects, err := safeApply(def.Program, nil, msg)
	if err != nil {
		return nil, nil, err
	}
	after, more, err := safeApply(def.Program, next, ev)
	if errors.Is(err, run.ErrRejected) {
		// The start ended the run at once: it stands, and the event is
		// recorded as ignored, with why.
		next.Ignored = append(next.Ignored, run.Ignored{Type: in.startEvent.Type, Reason: err.Error()})
		return next, effects, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return after, append(effects, more...), nil
}
