package dag

import (
	"math"
	"strconv"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
)

// Plan is what one Schedule call decided. When Schedule fails, Values and
// Tasks hold what the reference did before the failure in the same step:
// it saved those checkpointed values, and called those handlers only to
// abort them at once. A runner mirrors the saves and need not invoke the
// tasks.
//
// Order: nodes are evaluated in the order of the reference's microtask
// queue (see Wave): a node as soon as its last input is delivered, one
// that declares a checkpoint handing its value on two turns after it
// was computed. What a failure stops, and which of two failures is
// reported, follows from that order; ScheduleWave replays it exactly
// when told what settled since the previous call.
type Plan struct {
	// Values are the inline nodes this call computed, in evaluation order.
	// The caller adds them to its known values; those with Checkpoint set
	// are the values the reference saves.
	Values []NodeValue
	// Tasks are the task nodes whose inputs are all known and that are
	// neither known nor running, in evaluation order.
	Tasks []Invocation
	// Done reports that every node has a value: the reference's run settles
	// only when every declared node did, reachable from the output or not.
	Done bool
	// Output is the output node's value when Done.
	Output any
	// Ordered holds, by node id, the known values that hold objects
	// built at run time (*value.Object, in the reference's member order)
	// and that a node without a value yet (or a task in flight, whose
	// argument a retry computes again) still reads: what a runner hands
	// the next call as its ordered values, for the reference passes a
	// value to its consumers by reference for the whole run of the DAG.
	// Nil when there are none. Values and Output are plain.
	Ordered map[string]any
	// Marked holds, by node id, the known values that may hold the
	// reference's empty marker, as computed (the marker where a query
	// left it), and that a node without a value yet still reads: what a
	// runner that keeps values in memory hands the next call as
	// Wave.Marked, for the reference's consumers read the marker by
	// reference for the whole run of the DAG. A value in Values is its
	// JSON form. Nil when there are none.
	Marked map[string]any
	// given is the output as the reference hands its checkpoint store,
	// when it holds the empty marker; nil otherwise
	given any
}

// OutputGiven returns the output as the reference hands its checkpoint
// store's complete: Output, except that it holds the empty marker where
// a query left one, so that value.Canonical of it fails as the
// reference's store would ("a symbol is not a JSON value").
func (p Plan) OutputGiven() any {
	if p.given != nil {
		return p.given
	}
	return p.Output
}

// NodeValue is one node's computed value.
type NodeValue struct {
	ID         string
	Value      any
	Checkpoint bool
}

// Invocation is one task ready to run.
type Invocation struct {
	Node    string
	Task    string
	Version string // "" when the node declares none
	// Arg is exactly what the reference passes the handler:
	// {"with": <with resolved against the input scope, null when absent or
	// empty>, "input": <the input scope>}. An object the with query built
	// at run time is a *value.Object, so that its text keeps the order the
	// reference's handler sees; value.Plain makes it a map.
	Arg map[string]any
	// given is Arg as the reference hands it, holding the empty marker
	// where a query left one; nil when it holds none
	given map[string]any
}

// MarkedArg returns the argument as the reference hands its handler when
// it differs from Arg: when it holds the empty marker where a query left
// one in the with or the input (value.Empty; value.Canonical of it fails
// as the reference's JSON copy does). Nil when it holds none. An
// in-process handler, such as a simulation's mock, reads it; a worker
// gets Arg, which is JSON.
func (inv Invocation) MarkedArg() map[string]any { return inv.given }

// Schedule advances a run. input is the activation input (nil for none);
// values holds the value of every node known so far (task results, inline
// values from earlier plans, values restored from checkpoints); running
// names the task nodes already invoked. Neither map is modified.
//
// Every node that is not known, whose inbound sources are all known, is
// evaluated: inline kinds at once (their consumers may follow in the same
// call), task nodes by resolving their `with` and listing an Invocation.
// A failing select, query or `with` is the reference's JF2006, and a
// checkpointed value that is not JSON is JF2008; both carry the node id.
func (d *DAG) Schedule(input any, values map[string]any, running map[string]bool) (Plan, error) {
	return d.ScheduleWithin(nil, input, values, running)
}

// ScheduleWithin is Schedule charging every select, query and `with` it
// evaluates to b instead of each query's own step and byte limits.
func (d *DAG) ScheduleWithin(b *query.Budget, input any, values map[string]any, running map[string]bool) (Plan, error) {
	return d.ScheduleOrdered(b, input, values, nil, running)
}

// ScheduleOrdered is ScheduleWithin where ordered holds, for some known
// nodes, their value as the reference's consumers read it: objects built
// at run time as *value.Object in their member order (an earlier plan's
// Ordered, a task's result as its handler returned it, see
// value.DecodeOrdered). Such a value takes the place of the node's entry
// in values (its plain form, which is what is stored); ordered may be
// nil, and is not modified.
func (d *DAG) ScheduleOrdered(b *query.Budget, input any, values, ordered map[string]any, running map[string]bool) (Plan, error) {
	return d.ScheduleWave(b, input, values, ordered, running, Wave{})
}

// ScheduleWave is ScheduleOrdered told what happened since the previous
// call, so that it orders the step as the reference's promises do (see
// Wave). The zero Wave treats every known value as settled before the
// call, as ScheduleOrdered does.
func (d *DAG) ScheduleWave(b *query.Budget, input any, values, ordered map[string]any, running map[string]bool, w Wave) (Plan, error) {
	st := &step{d: d, b: b, input: input, n: len(d.nodes)}
	st.known = make([]bool, st.n)
	st.vals = make([]any, st.n)
	for id, v := range values {
		if i, ok := d.index[id]; ok {
			st.known[i], st.vals[i] = true, v
		}
	}
	for id, v := range ordered {
		if i, ok := d.index[id]; ok && value.HasObject(v) {
			if st.held == nil {
				st.held = make([]bool, st.n)
			}
			st.known[i], st.vals[i], st.held[i] = true, v, true
		}
	}
	for id, v := range w.Marked {
		if i, ok := d.index[id]; ok {
			if st.marked == nil {
				st.marked = make([]bool, st.n)
			}
			st.known[i], st.vals[i], st.marked[i] = true, v, true
			if value.HasObject(v) {
				if st.held == nil {
					st.held = make([]bool, st.n)
				}
				st.held[i] = true
			}
		}
	}
	err := st.run(running, w)
	plan := st.plan
	plan.Done = true
	for i := range st.known {
		if !st.known[i] {
			plan.Done = false
			break
		}
	}
	if err != nil {
		plan.Done = false
		return plan, err
	}
	known, vals, held, marked := st.known, st.vals, st.held, st.marked
	for i := range held {
		if held[i] && i != d.output && d.unread(i, known) && value.HasObject(vals[i]) {
			if plan.Ordered == nil {
				plan.Ordered = map[string]any{}
			}
			v := vals[i]
			if marked != nil && marked[i] {
				// stored as JSON, which the marker is not (Marked
				// keeps it for a runner that holds values in memory)
				v = query.Unmark(v)
			}
			plan.Ordered[d.nodes[i].ID] = v
		}
	}
	for i := range marked {
		// the output is kept until the run is done, when its store
		// reads it (OutputGiven)
		if marked[i] && ((i == d.output && !plan.Done) || (i != d.output && d.unread(i, known))) {
			if plan.Marked == nil {
				plan.Marked = map[string]any{}
			}
			plan.Marked[d.nodes[i].ID] = vals[i]
		}
	}
	if plan.Done {
		plan.Output = vals[d.output]
		if (held != nil && held[d.output]) || (marked != nil && marked[d.output]) {
			plan.Output = st.output
			if st.output == nil {
				// known on entry (an ordered or marked value handed in)
				plan.Output = value.Plain(vals[d.output])
				if marked != nil && marked[d.output] {
					plan.given, plan.Output = plan.Output, query.Unmark(plan.Output)
				}
			}
		}
	}
	return plan, nil
}

// unread reports whether a consumer of node i has no value yet.
func (d *DAG) unread(i int, known []bool) bool {
	for _, c := range d.nodes[i].consumers {
		if !known[c] {
			return true
		}
	}
	return false
}

// evaluate computes one ready node: its value, or for a task node the
// invocation that will produce it.
//
// The reference hands a node's value to its consumers by reference, so
// an object a query built (and the object of ports, in edge order) keeps
// its member order in the node that reads it: such values stay
// *value.Object here, read through Evaluator.Holding, and are made plain
// where they leave Schedule. held says which values may hold one (only
// what a query, a stylesheet or ports built), and the returned held
// whether v may.
//
// marked says which values may hold the empty marker, and the returned
// mark whether v may.
func (d *DAG) evaluate(nd *node, input any, vals []any, held, marked []bool, b *query.Budget) (v any, isHeld, mark bool, inv *Invocation, err error) {
	scope, holding, scopeMarked, err := d.scope(nd, vals, held, b)
	if err != nil {
		return nil, false, false, nil, err
	}
	if marked != nil {
		for _, e := range nd.inbound {
			scopeMarked = scopeMarked || marked[e.from]
		}
	}
	v, isHeld, mark, inv, err = d.evaluateIn(nd, input, scope, holding, scopeMarked, b)
	return v, isHeld, mark || (inv == nil && scopeMarked), inv, err
}

// evaluateIn computes the node from its scope; scopeMarked says the
// scope may hold the empty marker, which a stylesheet reads as the
// reference's does (and may hand on) and which leaves with a task's
// argument as JSON. mark says a query or a stylesheet's body left the
// marker in what it built.
func (d *DAG) evaluateIn(nd *node, input, scope any, holding, scopeMarked bool, b *query.Budget) (v any, isHeld, mark bool, inv *Invocation, err error) {
	within := func(q *query.Query) query.Evaluator {
		ev := q.Within(b)
		if holding {
			ev = ev.Holding()
		}
		return ev
	}
	switch nd.Kind {
	case KindInput:
		v = input
	case KindConst:
		v = nd.value
	case KindOutput:
		v, isHeld = scope, holding
	case KindQuery:
		res, ok, marks, err := within(nd.query).EvalMarked(scope, nil)
		if err != nil {
			return nil, false, false, nil, d.failed(nd, err.Error(), err)
		}
		if ok {
			v, isHeld = res, value.HasObject(res)
		}
		mark = marks
	case KindJSLT:
		res, ok, marks, err := nd.jslt.TransformOrdered(b, scope, nil, holding)
		if err != nil {
			return nil, false, false, nil, d.failed(nd, err.Error(), err)
		}
		if ok {
			v, isHeld = res, value.HasObject(res)
		}
		mark = marks
	case KindTask:
		var with any
		withMarked := false
		if nd.with != nil {
			// the handler receives with as text in the reference's order
			// (objects built at run time in insertion order)
			res, ok, m, err := within(nd.with).EvalMarked(scope, nil)
			if err != nil {
				return nil, false, false, nil, d.failed(nd, err.Error(), err)
			}
			if ok {
				with, withMarked = res, m
			}
		}
		inv := &Invocation{
			Node: nd.ID, Task: nd.Task, Version: nd.Version,
			Arg: map[string]any{"with": with, "input": scope},
		}
		if withMarked || scopeMarked {
			// the handler's argument leaves the engine as JSON; what the
			// reference hands its handler is kept for Wave.Refuse
			inv.given = inv.Arg
			inv.Arg = map[string]any{"with": query.Unmark(with), "input": query.Unmark(scope)}
		}
		return nil, false, false, inv, nil
	}
	return v, isHeld, mark, nil, nil
}

// CheckTaskResult returns the reference's JF2008 when the task node id
// declares a checkpoint and its result v is not JSON (NaN or ±Infinity a
// simulated task computed): the run fails at that node, when the value
// is saved, before anything downstream sees it.
func (d *DAG) CheckTaskResult(id string, v any) *fault.Error {
	i, ok := d.index[id]
	if !ok {
		return nil
	}
	return checkpointable(d.nodes[i], v)
}

func checkpointable(nd *node, v any) *fault.Error {
	if !nd.Checkpoint || isJSON(v) {
		return nil
	}
	if _, err := value.Canonical(v); err != nil {
		return &fault.Error{
			Code:   fault.JF2008,
			Reason: "node '" + nd.ID + "' declared checkpoint but produced a value that is not JSON-serializable: " + err.Error(),
			Path:   nd.Path, HasPath: true, NodeID: nd.ID, Cause: err,
		}
	}
	return nil
}

// scope builds a node's input scope (§6.1): each inbound value through its
// edge's select, then the single unported value, or the object of ports.
// holding says the scope may hold a *value.Object, marked that a select
// left the empty marker in what it built.
//
// A select's answer is handed on as the reference hands it, by
// reference: the objects it built in their member order, the marker
// where it left one.
func (d *DAG) scope(nd *node, vals []any, held []bool, b *query.Budget) (scope any, holding, marked bool, err error) {
	if len(nd.inbound) == 0 {
		return nil, false, false, nil
	}
	var ports *value.Object
	var portMap map[string]any
	switch {
	case nd.ported && (nd.portsSorted || nd.Kind == KindOutput):
		// a map walks in the order of sorted ports; an output's value
		// leaves the call as a map, where no order shows
		portMap = make(map[string]any, len(nd.inbound))
	case nd.ported:
		ports = value.NewObject(len(nd.inbound))
	}
	var single any
	for _, e := range nd.inbound {
		v, h := vals[e.from], held != nil && held[e.from]
		if e.sel != nil {
			ev := e.sel.Within(b)
			if h {
				ev = ev.Holding()
			}
			res, ok, m, err := ev.EvalMarked(v, nil)
			if err != nil {
				idx := strconv.Itoa(e.index)
				return nil, false, false, &fault.Error{
					Code:   fault.JF2006,
					Reason: "the select on edge " + idx + " into '" + nd.ID + "' failed: " + err.Error(),
					Path:   "/edges/" + idx + "/select", HasPath: true, NodeID: nd.ID, Cause: err,
				}
			}
			v = nil
			if ok {
				v = res
			}
			h = value.HasObject(v)
			marked = marked || m
		}
		holding = holding || h
		switch {
		case portMap != nil:
			portMap[e.port] = v
		case ports != nil:
			ports.Set(e.port, v)
		default:
			single = v
		}
	}
	switch {
	case portMap != nil:
		return portMap, holding, marked, nil
	case ports != nil:
		return ports, true, marked, nil
	}
	return single, holding, marked, nil
}

// TaskFailed returns the reference's JF2006 for a task node whose handler
// failed with message: "node '<id>' failed: <message>" at the node's path,
// carrying the node id. A workflow that catches the failure stores this
// error's Error() text as its message.
func (d *DAG) TaskFailed(id, message string) *fault.Error {
	path := "/nodes/" + value.EncodePointerSegment(id)
	if i, ok := d.index[id]; ok {
		path = d.nodes[i].Path
	}
	return &fault.Error{
		Code: fault.JF2006, Reason: "node '" + id + "' failed: " + message,
		Path: path, HasPath: true, NodeID: id,
	}
}

func (d *DAG) failed(nd *node, message string, cause error) *fault.Error {
	err := d.TaskFailed(nd.ID, message)
	err.Cause = cause
	return err
}

// Restore returns the checkpointed values a resumed run may seed: those of
// loaded whose node declares checkpoint: true. Others are dropped, as the
// reference drops them, and are recomputed.
func (d *DAG) Restore(loaded map[string]any) map[string]any {
	out := make(map[string]any, len(loaded))
	for id, v := range loaded {
		if d.Checkpoint(id) {
			out[id] = v
		}
	}
	return out
}

// isJSON reports whether v can be written as JSON, without writing it; the
// rare value that cannot is then canonicalized for the reference's message.
func isJSON(v any) bool {
	switch t := v.(type) {
	case nil, bool, string:
		return true
	case float64:
		return !math.IsNaN(t) && !math.IsInf(t, 0)
	case []any:
		for _, x := range t {
			if !isJSON(x) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, x := range t {
			if !isJSON(x) {
				return false
			}
		}
		return true
	}
	return false
}
