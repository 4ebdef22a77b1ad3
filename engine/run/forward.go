package run

import (
	"fmt"
	"slices"
	"strconv"
)

// Stranded returns nil when the run has a way forward that the fleet
// takes by itself, and otherwise says which node has none. A settled run
// needs none; a waiting run waits for the events its caller sends (and
// for its own timers, see Timers); a running run has work in flight, and
// every node of it must be held either by a retry timer or by an attempt
// whose deadline the deadline timer covers. Tests check it wherever a run
// can come to rest. A paused run waits for its operator on purpose: it
// has no way forward of its own until resumed, and is not stranded.
func (st *State) Stranded() error {
	if st.Status.Terminal() || st.Status == StatusWaiting || st.Status == StatusPaused {
		return nil
	}
	if st.Work == nil || len(st.Work.Running) == 0 {
		return fmt.Errorf("run %q is %s with no task in flight and no wait", st.RunID, st.Status)
	}
	for _, node := range sortedKeys(st.Work.Running) {
		a := st.Work.Running[node]
		switch {
		case a.Waiting:
			if a.RetryAt == 0 || !slices.Contains(mapValues(st.Work.Retries), node) {
				return fmt.Errorf("run %q: node %q waits for a retry with no retry timer", st.RunID, node)
			}
		case a.Deadline == 0:
			return fmt.Errorf("run %q: node %q attempt %d is in flight with no deadline", st.RunID, node, a.Attempt)
		case st.Deadline == 0 || st.Deadline > a.Deadline:
			return fmt.Errorf("run %q: node %q attempt %d has deadline %.0f but the deadline timer stands at %.0f",
				st.RunID, node, a.Attempt, a.Deadline, st.Deadline)
		}
	}
	return nil
}

// Timers are the timers the run's way forward relies on, as the ArmTimer
// effects that armed them: the deadline timer and retry timers while it
// runs, the chart's timers while it waits. A host can check that each is
// still scheduled. A paused run relies on none: its resume arms again
// every timer it then relies on.
func (st *State) Timers() []ArmTimer {
	var out []ArmTimer
	switch {
	case st.Status.Terminal(), st.Status == StatusPaused:
	case st.Status == StatusWaiting:
		for _, t := range st.Control.Timers {
			out = append(out, ArmTimer{ID: "t" + strconv.FormatInt(t.Token, 10), Deadline: t.At})
		}
	case st.Work != nil:
		if st.Deadline > 0 {
			out = append(out, ArmTimer{ID: DeadlineTimer, Deadline: st.Deadline})
		}
		for _, id := range sortedKeys(st.Work.Retries) {
			if a := st.Work.Running[st.Work.Retries[id]]; a != nil && a.Waiting {
				out = append(out, ArmTimer{ID: id, Deadline: a.RetryAt})
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
