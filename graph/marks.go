package graph

import (
	"github.com/jetflow/jetflow/engine/dag"
	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
)

// RunMarks places a run on its statechart: the active leaf, the visit
// counts, and the active state again as failed when the run failed.
func RunMarks(st *run.State) *Marks {
	m := &Marks{Active: st.Control.Active, Visits: make(map[string]int64, len(st.Context.Visits))}
	for id, v := range st.Context.Visits {
		if f, ok := v.(float64); ok {
			m.Visits[id] = int64(f)
		}
	}
	if st.Status == run.StatusFailed {
		m.Failed = st.Control.Active
	}
	return m
}

// RunDAGMarks gives each node of work state stateID its status in a run.
// For the activation in flight that is waiting, invoked or retrying with
// its attempt, or done. For the activation a run ended in (failed,
// cancelled or terminated) nothing is in flight any more: the nodes whose
// values it kept (and its input) are done, the node that failed is
// failed, and the others are unmarked, never run or abandoned. For a
// work state the run completed earlier, done (or failed, for the node a
// catch recorded). It is nil for a state the run never completed or
// entered.
func RunDAGMarks(wf *workflow.Workflow, st *run.State, stateID string) map[string]NodeMark {
	dg := wf.DAGs[stateID]
	if dg == nil {
		return nil
	}
	marks := map[string]NodeMark{}
	current := len(st.Control.Active) > 0 && st.Control.Active[0] == stateID &&
		st.Pending != nil && st.Pending.State == stateID && !st.Pending.HasResult
	if current {
		ended := st.Status.Terminal()
		values := st.Pending.Values
		var running map[string]*run.Attempt
		if st.Work != nil && !ended {
			values, running = st.Work.Values, st.Work.Running
		}
		for _, id := range dg.Nodes() {
			info, _ := dg.Node(id)
			_, known := values[id]
			if _, kept := st.Kept[id]; kept && ended {
				known = true
			}
			a := running[id]
			switch {
			case known || ended && info.Kind == dag.KindInput:
				marks[id] = NodeMark{Status: StatusDone}
			case a != nil && a.Waiting:
				marks[id] = NodeMark{Status: StatusRetrying, Attempt: a.Attempt}
			case a != nil:
				marks[id] = NodeMark{Status: StatusInvoked, Attempt: a.Attempt}
			case st.Error != nil && st.Error.Code == string(fault.JF2006) && st.Error.Path == info.Path:
				marks[id] = NodeMark{Status: StatusFailed}
			case !ended:
				marks[id] = NodeMark{Status: StatusWaiting}
			}
		}
		return marks
	}
	result, ok := st.Context.Results[stateID]
	if !ok {
		return nil
	}
	failed := caughtNode(result)
	for _, id := range dg.Nodes() {
		switch {
		case id == failed:
			marks[id] = NodeMark{Status: StatusFailed}
		case failed == "":
			marks[id] = NodeMark{Status: StatusDone}
		}
	}
	return marks
}

// caughtNode is the node a caught failure names, "" for any other
// result.
func caughtNode(result any) string {
	if c := run.CaughtIn(result); c != nil {
		return c.Node
	}
	return ""
}
