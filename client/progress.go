package client

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
// Tracker diffs successive records into the steps a person wants to see.

// ProgressKind says what a Progress reports.
type ProgressKind string

// Kinds of progress.
const (
	ProgressState   ProgressKind = "state"   // a state was entered
	ProgressInvoke  ProgressKind = "invoke"  // a task attempt was handed to workers
	ProgressSettle  ProgressKind = "settle"  // a task attempt ended
	ProgressWaiting ProgressKind = "waiting" // the run waits for an event or a timer
	ProgressEnd     ProgressKind = "end"     // the run ended: done, failed or cancelled
	// ProgressPaused: an operator paused the run; Detail is the reason.
	ProgressPaused ProgressKind = "paused"
	// ProgressRefused: the run consumed an input without effect (an
	// event that matched no transition) or refused it; Name is the
	// input's kind, Detail the reason.
	ProgressRefused ProgressKind = "refused"
)

// Progress is one thing that happened to a run.
type Progress struct {
	Kind ProgressKind
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
	// Code is a failed attempt's error code as its worker gave it
	// (EXIT_64, BAD_INPUT), when the Tracker could read the result.
	Code string
	// Detail is the task's output (canonical JSON cut to a line), its
	// error message, what a wait waits for (WaitsFor), or why an input
	// was refused.
	Detail string
	// Seq is a refused input's stream sequence.
	Seq uint64
	// Status is the run's status after an end step (step.StatusOf).
	Status *wire.Status
}

// Tracker turns successive records of one run into progress. Its zero
// value works; Workflow makes it more precise. A Tracker follows one run
// and is not safe for concurrent use.
type Tracker struct {
	// Workflow returns the compiled definition a run is pinned to; it is
	// asked once. Nil or failing, progress is still reported, in a less
	// certain order, and tasks are named from the invocations the records
	// carry.
	Workflow func(name, revision string) (*workflow.Workflow, error)
	// Result, when set, returns the task result stored at stream
	// sequence seq of the input stream (nil when the input there is no
	// result or cannot be read), so that a settled attempt reports its
	// worker's error code and message, and its output also when its
	// activation ended with it (the last task of a DAG).
	Result func(seq uint64) *wire.Result

	prevRec *runrecord.Record
	refused uint64 // the highest sequence of a refusal reported
	wf      *workflow.Workflow
	loaded  bool // Workflow was asked, once
	prev    *run.State
	status  string
}

// Observe returns the progress between the last record seen and rec (all
// of it for the first), in the order it happened.
func (t *Tracker) Observe(rec *runrecord.Record) ([]Progress, error) {
	st, err := step.DecodeState(rec)
	if err != nil {
		return nil, err
	}
	if !t.loaded && t.Workflow != nil && st.Workflow != "" {
		t.loaded = true
		t.wf, _ = t.Workflow(st.Workflow, st.Revision)
	}
	at := st.Control.Time
	if rec.Status != nil && rec.Status.Time > at {
		at = rec.Status.Time // a cancel moves no clock in the state
	}
	var steps []Progress
	prev := t.prev
	if prev == nil {
		prev = &run.State{}
	}
	steps = append(steps, t.refusals(rec)...)
	steps = append(steps, t.settled(prev, st, at)...)
	t.withResults(steps, t.prevRec, rec)
	if gap := t.unseen(steps, t.prevRec, rec, st, at); len(gap) > 0 {
		steps = append(gap, steps...)
	}
	for _, id := range orderEntered(t.wf, prev.Control.Active, entered(prev, st)) {
		steps = append(steps, Progress{Kind: ProgressState, At: at, State: id})
	}
	steps = append(steps, t.invoked(prev, st, rec, at)...)

	ws, err := step.StatusOf(st.RunID, rec, st)
	if err != nil {
		return nil, err
	}
	if status := ws.Status; status != t.status {
		switch {
		case run.Status(status).Terminal():
			steps = append(steps, Progress{Kind: ProgressEnd, At: at, Status: ws})
		case status == wire.StatusWaiting:
			steps = append(steps, Progress{Kind: ProgressWaiting, At: at, State: first(st.Control.Active), Detail: WaitsFor(t.wf, st.Control.Active)})
		case status == wire.StatusPaused:
			steps = append(steps, Progress{Kind: ProgressPaused, At: at, State: first(st.Control.Active), Detail: ws.Reason})
		}
		t.status = status
	}
	t.prev, t.prevRec = st, rec
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
func (t *Tracker) invoked(prev, st *run.State, rec *runrecord.Record, at float64) []Progress {
	if st.Work == nil {
		return nil
	}
	var steps []Progress
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
		s := Progress{Kind: ProgressInvoke, At: at, State: state, Node: node, Attempt: a.Attempt, Task: taskOf(t.wf, state, node, rec)}
		s.Name = nameOf(t.wf, s)
		steps = append(steps, s)
	}
	return steps
}

// settled reports the attempts prev had in flight that st no longer has.
func (t *Tracker) settled(prev, st *run.State, at float64) []Progress {
	if prev.Work == nil {
		return nil
	}
	state := activeWork(prev)
	same := st.Work != nil && st.Work.Activation == prev.Work.Activation
	var steps []Progress
	for _, node := range sortedKeys(prev.Work.Running) {
		a := prev.Work.Running[node]
		now := (*run.Attempt)(nil)
		if same {
			now = st.Work.Running[node]
		}
		if a.Waiting && now != nil {
			continue // its retry is still to come, or invoked would report it
		}
		// A waiting node gone from st was retried and settled in records
		// the watch skipped: report the retry's outcome.
		s := Progress{Kind: ProgressSettle, At: at, State: state, Node: node, Attempt: a.Attempt, Task: taskOf(t.wf, state, node, nil)}
		if a.Waiting {
			s.Attempt++
		}
		s.Name = nameOf(t.wf, s)
		switch {
		case same:
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
		case st.Status == run.StatusTerminated:
			s.Detail = "abandoned: the run was terminated"
		case st.Status == run.StatusFailed && st.Error != nil:
			s.Detail = BareMessage(st.Error.Code, st.Error.Path, st.Error.Message)
		default:
			if msg, ok := caughtBy(st, node); ok {
				s.Detail = msg
			} else {
				s.OK = true
				// A plain work state's result is its task's output.
				if r, ok := st.Context.Results[state]; ok && plainWork(t.wf, state) {
					s.Detail = compact(r)
				}
			}
		}
		steps = append(steps, s)
	}
	return steps
}

// TaskAttempt is a task attempt a run has in flight.
type TaskAttempt struct {
	// Node is the attempt's node in its work state's DAG; Task is
	// task@version ("" when neither the workflow nor the record says).
	Node, Task string
	Attempt    int
	// Waiting says the attempt failed and waits for its retry.
	Waiting bool
}

// InFlight lists the task attempts st has in flight, by node. wf (nil
// when unknown) and the invocations rec carries name their tasks.
func InFlight(wf *workflow.Workflow, st *run.State, rec *runrecord.Record) []TaskAttempt {
	if st.Work == nil {
		return nil
	}
	var out []TaskAttempt
	for _, node := range sortedKeys(st.Work.Running) {
		a := st.Work.Running[node]
		out = append(out, TaskAttempt{Node: node, Task: taskOf(wf, activeWork(st), node, rec), Attempt: a.Attempt, Waiting: a.Waiting})
	}
	return out
}

// nameOf is a task step's node as people call it.
func nameOf(wf *workflow.Workflow, s Progress) string {
	if task, _, ok := strings.Cut(s.Task, "@"); ok && plainWork(wf, s.State) {
		return task
	}
	return s.Node
}

// plainWork reports a work state that runs one task and nothing else
// (input, task, output), whose result is the task's output.
func plainWork(wf *workflow.Workflow, state string) bool {
	if wf == nil || wf.DAGs[state] == nil {
		return false
	}
	d := wf.DAGs[state]
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
	c := run.CaughtIn(st.Context.Data)
	if c == nil || c.Node != node {
		return "", false
	}
	return BareMessage(c.Code, "/nodes/"+node, c.Message) + caughtMark, true
}

// caughtMark ends the detail of a failure the work state's catch took.
const caughtMark = " (caught)"

// activeWork is the work state whose activation is in flight.
func activeWork(st *run.State) string {
	if st.Pending != nil {
		return st.Pending.State
	}
	return first(st.Control.Active)
}

// taskOf names a node's task as task@version, from the workflow or else
// from the invocations the record carries.
func taskOf(wf *workflow.Workflow, state, node string, rec *runrecord.Record) string {
	if wf != nil {
		if d := wf.DAGs[state]; d != nil {
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

// WaitsFor describes what a run waiting in the active states waits for:
// "event payment or a timer of 1.5s"; "" when wf (nil when unknown) does
// not say.
func WaitsFor(wf *workflow.Workflow, active []string) string {
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

// BareMessage is an engine error's message without the code and location
// it repeats ("JF2006: node 'x' failed: boom at /nodes/x" is "node 'x'
// failed: boom").
func BareMessage(code, path, msg string) string {
	msg = strings.TrimPrefix(msg, code+": ")
	if path != "" {
		msg = strings.TrimSuffix(msg, " at "+path)
	}
	return msg
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
