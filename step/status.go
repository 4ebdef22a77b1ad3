package step

import (
	"fmt"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/wire"
)

// StatusOf is run runID's status as its record rec holds it: the status
// the record announced when it agrees with the state, else the one the
// state itself describes (nothing announced yet, or an announcement the
// state has moved past), in the fields and encoding an announcement has.
// st is rec's state decoded; nil decodes it. Every reader of a run's
// status (the client, the command, the console) takes it from here, so
// that they agree with each other and with the announcements.
func StatusOf(runID string, rec *runrecord.Record, st *run.State) (*wire.Status, error) {
	if st == nil {
		var err error
		if st, err = DecodeState(rec); err != nil {
			return nil, err
		}
	}
	if rec.Status != nil && run.Status(rec.Status.Status) == st.Status {
		return rec.Status, nil
	}
	// What the reducer would announce for this state, at the state's
	// own time.
	return statusFrom(runID, st, st.Announcement(), st.Control.Time)
}

// statusFrom is the status that announces s for run runID at time now:
// the one mapping from the reducer's terms to the wire's, shared by
// announcements (Render) and StatusOf.
func statusFrom(runID string, st *run.State, s *run.Settled, now float64) (*wire.Status, error) {
	ws := &wire.Status{
		Run: runID, Workflow: st.Workflow, Revision: st.Revision,
		Status: string(s.Status), State: s.State, Time: now,
		Error: RunError(s.Error),
		Since: s.Since, Reason: s.Reason, Operator: s.Operator,
	}
	if s.Status == run.StatusDone || s.Result != nil {
		r, err := rawJSON(s.Result)
		if err != nil {
			return nil, fmt.Errorf("run result: %w", err)
		}
		ws.Result = r
	}
	return ws, nil
}

// RunError is a run's failure as the wire carries it; nil for nil.
func RunError(f *run.Failure) *wire.RunError {
	if f == nil {
		return nil
	}
	return &wire.RunError{Code: f.Code, Path: f.Path, Message: f.Message}
}
