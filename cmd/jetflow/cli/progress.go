package cli

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jetflow/jetflow/engine/dag"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
)

// A run's progress is read from its stored record, not from a log: the
// record is the truth, and each record is one step of the reducer. A
// tracker diffs successive records into the steps a person wants to see.

// Kinds of progress steps.
const (
	stepState   = "state"   // a state was entered
	stepInvoke  = "invoke"  // a task attempt was handed to workers
	stepSettle  = "settle"  // a task attempt ended
	stepWaiting = "waiting" // the run waits for an event or a timer
	stepEnd     = "end"     // the run ended: done, failed or cancelled
)

// step is one thing that happened to a run.
type progressStep struct {
	Kind string
	// At is the run's logical time of the record that showed it, Unix ms.
	At float64
	// State is the state id (a JSON Pointer) the step is about.
	State string
	// Node, Task and Attempt describe a task step; Task is task@version.
	// Name is what people call the node: its id in a DAG, the task's
	// name in a work state that runs one task (whose node is "task").
	Node    string
	Name    string
	Task    string
	Attempt int
	// OK says a settled attempt succeeded; Retry that a failed one will
	// be tried again.
	OK, Retry bool
	// Detail is the task's output, its error, or what a wait waits for.
	Detail string
	// Status is the run's status after an end step.
	Status *wire.Status
}

// tracker turns successive records of one run into steps.
type tracker struct {
	// workflow returns the compiled definition a run is pinned to; nil
	// or failing, steps are still reported, in a less certain order.
	workflow func(name, revision string) (*workflow.Workflow, error)

	wf     *workflow.Workflow
	loaded bool // workflow was asked, once
	prev   *run.State
	status string
	ended  bool
}

// observe returns the steps between the last record seen and rec.
func (t *tracker) observe(rec *runrecord.Record) ([]progressStep, error) {
	st, err := step.DecodeState(rec)
	if err != nil {
		return nil, err
	}
	if !t.loaded && t.workflow != nil && st.Workflow != "" {
		t.loaded = true
		t.wf, _ = t.workflow(st.Workflow, st.Revision)
	}
	at := st.Control.Time
	if rec.Status != nil && rec.Status.Time > at {
		at = rec.Status.Time // a cancel moves no clock in the state
	}
	var steps []progressStep
	prev := t.prev
	if prev == nil {
		prev = &run.State{}
	}
	steps = append(steps, t.settled(prev, st, at)...)
	for _, id := range orderEntered(t.wf, prev.Control.Active, entered(prev, st)) {
		steps = append(steps, progressStep{Kind: stepState, At: at, State: id})
	}
	steps = append(steps, t.invoked(prev, st, rec, at)...)

	ws, err := step.StatusOf(st.RunID, rec, st)
	if err != nil {
		return nil, err
	}
	if status := ws.Status; status != t.status {
		switch {
		case run.Status(status).Terminal():
			steps = append(steps, progressStep{Kind: stepEnd, At: at, Status: ws})
			t.ended = true
		case status == wire.StatusWaiting:
			steps = append(steps, progressStep{Kind: stepWaiting, At: at, State: first(st.Control.Active), Detail: waitsFor(t.wf, st.Control.Active)})
		}
		t.status = status
	}
	t.prev = st
	return steps, nil
}

// entered counts the visits each state gained between two states.
func entered(prev, st *run.State) map[string]int {
	out := map[string]int{}
	for id, v := range st.Context.Visits {
		n, _ := v.(float64)
		p, _ := prev.Context.Visits[id].(float64)
		if n > p {
			out[id] = int(n - p)
		}
	}
	return out
}

// invoked reports task attempts that st has in flight and prev had not.
func (t *tracker) invoked(prev, st *run.State, rec *runrecord.Record, at float64) []progressStep {
	if st.Work == nil {
		return nil
	}
	var steps []progressStep
	for _, node := range sortedKeys(st.Work.Running) {
		a := st.Work.Running[node]
		if a.Waiting {
			continue
		}
		if prev.Work != nil && prev.Work.Activation == st.Work.Activation {
			if p := prev.Work.Running[node]; p != nil && !p.Waiting && p.Attempt == a.Attempt {
				continue
			}
		}
		state := activeWork(st)
		s := progressStep{Kind: stepInvoke, At: at, State: state, Node: node, Attempt: a.Attempt, Task: t.taskOf(state, node, rec)}
		s.Name = t.nameOf(s)
		steps = append(steps, s)
	}
	return steps
}

// settled reports the attempts prev had in flight that st no longer has.
func (t *tracker) settled(prev, st *run.State, at float64) []progressStep {
	if prev.Work == nil {
		return nil
	}
	state := activeWork(prev)
	same := st.Work != nil && st.Work.Activation == prev.Work.Activation
	var steps []progressStep
	for _, node := range sortedKeys(prev.Work.Running) {
		a := prev.Work.Running[node]
		if a.Waiting {
			continue
		}
		s := progressStep{Kind: stepSettle, At: at, State: state, Node: node, Attempt: a.Attempt, Task: t.taskOf(state, node, nil)}
		s.Name = t.nameOf(s)
		switch {
		case same:
			now := st.Work.Running[node]
			if now != nil && !now.Waiting && now.Attempt == a.Attempt {
				continue // still running
			}
			if now != nil {
				s.Retry, s.Detail = true, "failed, will retry"
			} else {
				s.OK = true
				if v, ok := st.Work.Values[node]; ok {
					s.Detail = compact(v)
				}
			}
		case st.Status == run.StatusCancelled:
			s.Detail = "abandoned: the run was cancelled"
		case st.Status == run.StatusFailed && st.Error != nil:
			s.Detail = bareMessage(st.Error.Code, st.Error.Path, st.Error.Message)
		default:
			if msg, ok := caughtBy(st, node); ok {
				s.Detail = msg
			} else {
				s.OK = true
				// A plain work state's result is its task's output.
				if r, ok := st.Context.Results[state]; ok && t.plainWork(state) {
					s.Detail = compact(r)
				}
			}
		}
		steps = append(steps, s)
	}
	return steps
}

// nameOf is a task step's node as people call it.
func (t *tracker) nameOf(s progressStep) string {
	if task, _, ok := strings.Cut(s.Task, "@"); ok && t.plainWork(s.State) {
		return task
	}
	return s.Node
}

// plainWork reports a work state that runs one task and nothing else
// (input, task, output), whose result is the task's output.
func (t *tracker) plainWork(state string) bool {
	if t.wf == nil || t.wf.DAGs[state] == nil {
		return false
	}
	d := t.wf.DAGs[state]
	tasks := 0
	for _, n := range d.Nodes() {
		if info, _ := d.Node(n); info.Kind == dag.KindTask {
			tasks++
		}
	}
	return tasks == 1 && len(d.Nodes()) == 3
}

// caughtBy returns the message of the caught failure of node, when the run
// left a work state through its catch because of it.
func caughtBy(st *run.State, node string) (string, bool) {
	data, _ := st.Context.Data.(map[string]any)
	caught, _ := data["error"].(map[string]any)
	if id, _ := caught["nodeId"].(string); id != node {
		return "", false
	}
	msg, _ := caught["message"].(string)
	code, _ := caught["code"].(string)
	return bareMessage(code, "/nodes/"+node, msg) + " (caught)", true
}

// activeWork is the work state whose activation is in flight.
func activeWork(st *run.State) string {
	if st.Pending != nil {
		return st.Pending.State
	}
	return first(st.Control.Active)
}

// taskOf names a node's task as task@version, from the workflow or else
// from the invocations the record carries.
func (t *tracker) taskOf(state, node string, rec *runrecord.Record) string {
	if t.wf != nil {
		if d := t.wf.DAGs[state]; d != nil {
			if info, ok := d.Node(node); ok && info.Task != "" {
				return info.Task + "@" + info.Version
			}
		}
	}
	if rec != nil {
		for _, o := range rec.Outbox {
			var inv wire.Invocation
			if o.Kind == runrecord.OutInvoke && json.Unmarshal(o.Data, &inv) == nil && inv.Node == node {
				return inv.Task + "@" + inv.Version
			}
		}
	}
	return ""
}

// waitsFor describes what a waiting run waits for.
func waitsFor(wf *workflow.Workflow, active []string) string {
	var parts []string
	for _, id := range active {
		s := specOf(wf, id)
		if s == nil {
			continue
		}
		for _, w := range s.On {
			if !slices.Contains(parts, "event "+w.Event) {
				parts = append(parts, "event "+w.Event)
			}
		}
		if s.After != nil {
			parts = append(parts, "a timer of "+formatMs(s.After.Ms))
		}
	}
	return strings.Join(parts, " or ")
}

// stateName shortens a state id for people: /states/fulfil/flow/states/ship
// is fulfil/ship.
func stateName(id string) string {
	return strings.ReplaceAll(strings.TrimPrefix(id, "/states/"), "/flow/states/", "/")
}

// compact renders a value as canonical JSON cut to a line's worth.
func compact(v any) string {
	s, err := value.Canonical(v)
	if err != nil {
		b, _ := json.Marshal(v)
		s = string(b)
	}
	return clip(s, 120)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// formatMs renders a duration in milliseconds as Go does (1.5s, 1m0s).
func formatMs(ms float64) string { return time.Duration(ms * float64(time.Millisecond)).String() }
