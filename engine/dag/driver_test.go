package dag_test

import (
	"maps"
	"sort"
	"testing"

	"github.com/jetflow/jetflow/engine/dag"
	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
)

// mock computes a task's outcome from its handler argument as the
// generator's mock does.
func mock(t *testing.T, m map[string]any, arg map[string]any) (any, string, bool) {
	if msg, ok := m["error"]; ok {
		return nil, msg.(string), false
	}
	if v, ok := m["value"]; ok {
		return v, "", true
	}
	if which, ok := m["echo"]; ok {
		switch which {
		case "with":
			return arg["with"], "", true
		case "input":
			return arg["input"], "", true
		}
		return map[string]any{"with": arg["with"], "input": arg["input"]}, "", true
	}
	q, err := query.Compile(m["query"], query.Options{})
	if err != nil {
		t.Fatalf("mock query: %v", err)
	}
	// the reference's mock reads a canonical copy of the argument, and
	// its result is handed on as the query built it
	v, _, err := q.Within(nil).EvalOrdered(value.Plain(map[string]any{"with": arg["with"], "input": arg["input"]}), nil)
	if err != nil {
		return nil, err.Error(), false
	}
	return v, "", true
}

type wave struct {
	calls []any
	saves []any
}

// drive runs d as a runner would: invoke what a plan names, settle each
// wave's tasks in node-id order, and schedule again, until the run is done
// or fails.
func drive(t *testing.T, d *dag.DAG, c dagCase) ([]wave, any, error) {
	values := map[string]any{}
	if c.HasSeed {
		values = d.Restore(c.Seed)
	}
	running := map[string]bool{}
	var waves []wave
	var pending []dag.Invocation
	// the values the last plan keeps ordered, and the results of each
	// wave as their handlers built them
	var ordered map[string]any
	for range 1000 {
		var w wave
		sort.Slice(pending, func(i, j int) bool { return value.CompareUTF16(pending[i].Node, pending[j].Node) < 0 })
		for _, inv := range pending {
			info, _ := d.Node(inv.Node)
			v, msg, ok := mock(t, c.Mocks[info.Task].(map[string]any), inv.Arg)
			if !ok {
				waves = append(waves, w)
				return waves, nil, d.TaskFailed(inv.Node, msg)
			}
			delete(running, inv.Node)
			if value.HasObject(v) {
				ordered = maps.Clone(ordered)
				if ordered == nil {
					ordered = map[string]any{}
				}
				ordered[inv.Node], v = v, value.Plain(v)
			}
			values[inv.Node] = v
			if d.Checkpoint(inv.Node) {
				w.saves = append(w.saves, map[string]any{"node": inv.Node, "value": v})
			}
		}
		plan, err := d.ScheduleOrdered(nil, c.Input, values, ordered, running)
		for _, nv := range plan.Values {
			values[nv.ID] = nv.Value
			if nv.Checkpoint {
				w.saves = append(w.saves, map[string]any{"node": nv.ID, "value": nv.Value})
			}
		}
		ordered = plan.Ordered
		for _, inv := range plan.Tasks {
			running[inv.Node] = true
			info, _ := d.Node(inv.Node)
			w.calls = append(w.calls, map[string]any{"node": inv.Node, "task": info.Task, "arg": inv.Arg})
		}
		if err != nil {
			waves = append(waves, w)
			return waves, nil, err
		}
		waves = append(waves, w)
		if plan.Done {
			return waves, plan.Output, nil
		}
		if len(plan.Tasks) == 0 && len(running) == 0 {
			t.Fatal("run stalled: nothing ready, nothing running, not done")
		}
		pending = plan.Tasks
	}
	t.Fatal("run did not settle")
	return nil, nil, nil
}
