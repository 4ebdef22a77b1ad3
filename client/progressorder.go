package client

import (
	"slices"
	"sort"

	"github.com/jetflow/jetflow/engine/workflow"
)

// orderEntered orders the states entered in one step as the run went
// through them: from the states active before, along the workflow's
// transitions. A step may pass through several states (a work state's
// end, a choice, the next wait); the record only says how often each was
// visited. A run is in one state at a time, so the states of a step are
// one path: it is followed depth first, a flow's states before where the
// flow leads (a flow is left through its final state, whose successors
// include the flow's; leaving it directly, by a catch or an event of the
// flow, only explains what its states did not).
func orderEntered(wf *workflow.Workflow, before []string, visits map[string]int) []string {
	if len(visits) == 0 {
		return nil
	}
	var out []string
	done := map[string]bool{}
	var enter func(id string) bool
	enter = func(id string) bool {
		if done[id] || visits[id] == 0 {
			return false
		}
		if spec := specOf(wf, id); spec != nil && spec.Parent != "" {
			enter(spec.Parent) // a flow is entered before its states
		}
		done[id] = true
		out = append(out, id)
		return true
	}
	var walk, leave func(id string)
	walk = func(id string) {
		if spec := specOf(wf, id); spec != nil && spec.Kind == workflow.KindFlow && enter(spec.Initial) {
			walk(spec.Initial)
		}
		leave(id)
	}
	leave = func(id string) {
		for _, next := range successors(wf, id) {
			if enter(next) {
				walk(next)
			}
		}
	}
	if len(before) == 0 && wf != nil && enter(wf.Lowered.Initial) {
		walk(wf.Lowered.Initial)
	}
	for _, id := range before {
		leave(id)
		for spec := specOf(wf, id); spec != nil && spec.Parent != ""; spec = specOf(wf, spec.Parent) {
			leave(spec.Parent)
		}
	}
	// What the transitions did not explain, in declaration order.
	var rest []string
	for id := range visits {
		if !done[id] {
			rest = append(rest, id)
		}
	}
	order := map[string]int{}
	if wf != nil {
		for i, id := range wf.Lowered.States {
			order[id] = i + 1
		}
	}
	sort.Slice(rest, func(i, j int) bool {
		if order[rest[i]] != order[rest[j]] {
			return order[rest[i]] < order[rest[j]]
		}
		return rest[i] < rest[j]
	})
	return append(out, rest...)
}

func specOf(wf *workflow.Workflow, id string) *workflow.Spec {
	if wf == nil {
		return nil
	}
	return wf.Spec(id)
}

// successors are the states a state can lead to directly; a final state
// of a flow leads where the flow goes next.
func successors(wf *workflow.Workflow, id string) []string {
	s := specOf(wf, id)
	if s == nil {
		return nil
	}
	out := []string{s.Then, s.Catch}
	for _, c := range s.Choose {
		out = append(out, c.To)
	}
	out = append(out, s.Otherwise)
	for _, w := range s.On {
		out = append(out, w.To)
	}
	if s.After != nil {
		out = append(out, s.After.To)
	}
	if s.Kind == workflow.KindFinal && s.Parent != "" {
		if p := specOf(wf, s.Parent); p != nil {
			out = append(out, p.Then)
		}
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}
