package cli

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jetflow/jetflow/engine/run"
)

// timerJSON is a timer a run has armed, as status --json lists it.
type timerJSON struct {
	// Kind is "wait" (a state's after), "retry" (a failed task's next
	// attempt) or "deadline" (a task attempt's timeout).
	Kind string `json:"kind"`
	// At is when it fires, in the CLI's time format.
	At string `json:"at"`
	// State is the state it belongs to; Node the task node of a retry.
	State string `json:"state,omitempty"`
	Node  string `json:"node,omitempty"`

	at time.Time
}

// armedTimers lists the timers st has armed, soonest first: a paused
// run's fire only once it is resumed.
func armedTimers(st *run.State) []timerJSON {
	var out []timerJSON
	add := func(kind string, ms float64, state, node string) {
		t := time.UnixMilli(int64(ms))
		out = append(out, timerJSON{Kind: kind, At: stamp(t), State: stateName(state), Node: node, at: t})
	}
	for _, t := range st.Control.Timers {
		add("wait", t.At, strings.Join(st.Control.Active, ", "), "")
	}
	if st.Work != nil {
		for _, node := range sortedNodes(st.Work.Running) {
			if a := st.Work.Running[node]; a.Waiting && a.RetryAt > 0 {
				add("retry", a.RetryAt, workState(st), node)
			}
		}
	}
	if st.Deadline > 0 {
		add("deadline", st.Deadline, workState(st), "")
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// timerText is a timer for status: "2026-…Z (in 42s): the wait in
// await-payment ends".
func timerText(t timerJSON, now time.Time) string {
	var what string
	switch t.Kind {
	case "wait":
		what = "the wait in " + t.State + " takes its after branch"
	case "retry":
		what = fmt.Sprintf("task node %s is tried again", t.Node)
	default:
		what = "the task attempts in flight in " + t.State + " time out (TASK_TIMEOUT)"
	}
	return when(t.at, now) + ": " + what
}

// workState is the work state whose activation is in flight.
func workState(st *run.State) string {
	if st.Pending != nil {
		return st.Pending.State
	}
	if len(st.Control.Active) > 0 {
		return st.Control.Active[0]
	}
	return ""
}

func sortedNodes(m map[string]*run.Attempt) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
