package dag_test

import (
	"errors"
	"maps"
	"slices"
	"sort"
	"strconv"

	"github.com/jetflow/jetflow/engine/dag"
	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
)

// mock computes a task's outcome from its handler argument as the
// generator's mock does: a mock query that does not compile fails the task
// with the compile error's message.
// The mock's value is handed on as written, its query compiled as
// written: written is the order of the mock's objects.
func mock(m map[string]any, written value.Written, arg map[string]any) (any, string, bool) {
	if msg, ok := m["error"]; ok {
		return nil, msg.(string), false
	}
	if v, ok := m["value"]; ok {
		return asWritten(v, written.Under("/value"), ""), "", true
	}
	if which, ok := m["echo"]; ok {
		// the handler echoes its canonical copy of the argument
		switch which {
		case "with":
			return value.Plain(arg["with"]), "", true
		case "input":
			return value.Plain(arg["input"]), "", true
		}
		return value.Plain(map[string]any{"with": arg["with"], "input": arg["input"]}), "", true
	}
	q, err := query.Compile(m["query"], query.Options{Written: written.Under("/query")})
	if err != nil {
		return nil, err.Error(), false
	}
	// the reference's mock reads a canonical copy of the argument, and
	// its result is handed on as the query built it, the empty marker
	// included
	v, _, _, err := q.Within(nil).EvalMarked(value.Plain(map[string]any{"with": arg["with"], "input": arg["input"]}), nil)
	if err != nil {
		return nil, err.Error(), false
	}
	return v, "", true
}

type wave struct {
	calls []any
	saves []any
}

// copiesArgument is the generator's handler, which copies its argument as
// canonical JSON before it records the call: an argument that is not JSON
// fails the node at once.
func copiesArgument(inv dag.Invocation) (string, bool) {
	if _, err := value.Canonical(value.Plain(inv.Arg)); err != nil {
		return err.Error(), true
	}
	return "", false
}

// errStalled is drive's own failure: the plans left nothing to wait for
// before the run was done, or it never settled.
var errStalled = errors.New("run stalled: nothing ready, nothing running, not done")

// drive runs d as a runner would: invoke what a plan names, settle each
// wave's tasks in node-id order, and schedule again, until the run is done
// or fails.
func drive(d *dag.DAG, c dagCase) ([]wave, any, error) {
	values := map[string]any{}
	// the values the last plan keeps ordered, and the results of each
	// wave as their handlers built them
	var ordered map[string]any
	var marked map[string]any // the generator keeps values in memory, the marker included
	if c.HasSeed {
		// the reference's store hands back the seed as written
		values = d.Restore(c.Seed)
		for id, v := range values {
			v = asWritten(v, c.Written.Under("/seed/"+value.EncodePointerSegment(id)), "")
			if value.HasObject(v) {
				if ordered == nil {
					ordered = map[string]any{}
				}
				ordered[id] = v
			}
		}
	}
	restored := map[string]bool{}
	for id := range values {
		restored[id] = true
	}
	running := map[string]bool{}
	var waves []wave
	var pending []dag.Invocation
	for range 1000 {
		var w wave
		sort.Slice(pending, func(i, j int) bool { return value.CompareUTF16(pending[i].Node, pending[j].Node) < 0 })
		// the generator settles a wave's handlers in node-id order
		settled := make([]string, 0, len(pending))
		for _, inv := range pending {
			settled = append(settled, inv.Node)
			info, _ := d.Node(inv.Node)
			v, msg, ok := mock(c.Mocks[info.Task].(map[string]any),
				c.Written.Under("/mocks/"+value.EncodePointerSegment(info.Task)), inv.Arg)
			if !ok {
				waves = append(waves, w)
				return waves, nil, d.TaskFailed(inv.Node, msg)
			}
			delete(running, inv.Node)
			if err := d.CheckTaskResult(inv.Node, value.Plain(v)); err != nil {
				waves = append(waves, w)
				return waves, nil, err
			}
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
		plan, err := d.ScheduleWave(nil, c.Input, values, ordered, running, dag.Wave{
			Settled: settled, Restored: restored, Refuse: copiesArgument, Marked: marked,
		})
		for _, nv := range plan.Values {
			values[nv.ID] = nv.Value
			if nv.Checkpoint {
				w.saves = append(w.saves, map[string]any{"node": nv.ID, "value": nv.Value})
			}
		}
		ordered, marked = plan.Ordered, plan.Marked
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
			// the generator's store copies the result as canonical JSON
			if _, cerr := value.Canonical(plan.OutputGiven()); cerr != nil {
				return waves, nil, &fault.Error{
					Code: fault.JF2009, Reason: "the checkpoint store failed to complete run 'r': " + cerr.Error(),
					HasPath: true,
				}
			}
			return waves, plan.Output, nil
		}
		if len(plan.Tasks) == 0 && len(running) == 0 {
			return waves, nil, errStalled
		}
		pending = plan.Tasks
	}
	return waves, nil, errStalled
}

// asWritten returns v with each object whose written order (w, by pointer
// from path) is not Keys order rebuilt as a *value.Object in that order.
func asWritten(v any, w value.Written, path string) any {
	switch x := v.(type) {
	case []any:
		var out []any
		for i, e := range x {
			if ew := asWritten(e, w, path+"/"+strconv.Itoa(i)); value.HasObject(ew) {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = ew
			}
		}
		if out == nil {
			return x
		}
		return out
	case map[string]any:
		keys, ok := w[path]
		if !ok {
			keys = value.Keys(x)
		}
		o := value.NewObject(len(keys))
		nested := false
		for _, k := range keys {
			e := asWritten(x[k], w, path+"/"+value.EncodePointerSegment(k))
			nested = nested || value.HasObject(e)
			o.Set(k, e)
		}
		if !ok && !nested {
			return x
		}
		return o
	}
	return v
}
