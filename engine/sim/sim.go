// Package sim runs a workflow offline against mocked tasks: the engine of
// `jetflow simulate`, for workflow authors' own tests. It drives the same
// reducer the fleet uses, delivering each call's messages and answering
// each task invocation with its mock at once, as the reference's in-process
// run does.
package sim

import (
	"errors"
	"fmt"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/engine/workflow"
)

// ErrScenario is wrapped by refusals of a scenario outside the contract.
var ErrScenario = errors.New("invalid scenario")

// Run runs a scenario and returns the output object: {"calls": [...]} or
// {"compileError": {...}}. The scenario is the decoded JSON; its mock
// queries are read in Keys order, as canonical text writes them (RunJSON
// reads them as written).
func Run(scenario any) (map[string]any, error) {
	return runWith(scenario, nil, runOptions{})
}

// runOptions are what a test may ask of a run besides the scenario.
type runOptions struct {
	// observe, when not nil, is handed every invocation before its mock
	// answers it.
	observe func(*run.Invoke)
	// stored reads every state back from its encoding before the next
	// input (see reload); inProcess, when not nil, is set when the
	// scenario was kept in memory instead.
	stored    bool
	inProcess *bool
}

// runWith is Run with the scenario's written member order (nil: Keys
// order) and a test's options.
func runWith(scenario any, written value.Written, o runOptions) (map[string]any, error) {
	s, err := parse(scenario, written)
	if err != nil {
		return nil, err
	}
	s.observe, s.stored = o.observe, o.stored
	if o.inProcess != nil {
		defer func() { *o.inProcess = s.inProcess }()
	}
	wf, err := workflow.Compile(s.document, workflow.Options{Tasks: s.registry()})
	if err != nil {
		return map[string]any{"compileError": coded(err)}, nil
	}
	calls := make([]any, 0, len(s.calls))
	var prev *run.State
	for _, c := range s.calls {
		st, err := s.call(wf, prev, c)
		if err != nil {
			if fault.CodeOf(err) == "" {
				return nil, err
			}
			calls = append(calls, map[string]any{"error": coded(err)})
			continue
		}
		if st.Status == run.StatusFailed {
			f := st.Error
			var path any = f.Path
			if f.Unlocated {
				path = nil
			}
			calls = append(calls, map[string]any{"error": map[string]any{"code": f.Code, "path": path, "message": f.Message}})
			continue
		}
		prev = st
		var result any
		if st.Status == run.StatusDone {
			result = st.Context.Data
		}
		calls = append(calls, map[string]any{"status": string(st.Status), "result": result, "snapshot": st.Snapshot(wf)})
	}
	return map[string]any{"calls": calls}, nil
}

// RunJSON runs a scenario given as JSON text and returns the canonical
// output line. Its mock queries are compiled as written, as the
// reference compiles a handler's query from the object it is given: a
// constructor builds its members in the order written and $for and $let
// bind in it. The document, inputs and events are read canonically.
func RunJSON(data []byte) (string, error) {
	return runJSON(data, runOptions{})
}

// runJSON is RunJSON with a test's options.
func runJSON(data []byte, o runOptions) (string, error) {
	v, written, err := value.DecodeWritten(data, value.Limits{})
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrScenario, err)
	}
	out, err := runWith(v, written, o)
	if err != nil {
		return "", err
	}
	return value.Canonical(out)
}

func coded(err error) map[string]any {
	var path any
	if p, ok := fault.PathOf(err); ok {
		path = p
	}
	return map[string]any{"code": string(fault.CodeOf(err)), "path": path, "message": err.Error()}
}

// options are the reducer's options for the scenario's mocks: no retry,
// as the reference has none, and a mock fails as it is called, as the
// reference's handler throws. readFirst says that no other result is due
// before a task invoked now is read: a checkpoint that refuses its result
// then fails the run within the step that invokes it, in the order of
// the reference's microtask queue (see answer).
func (s *scenario) options(wf *workflow.Workflow, readFirst bool) run.Options {
	var failsAtRead func(inv *run.Invoke) error
	if readFirst {
		failsAtRead = func(inv *run.Invoke) error {
			res := s.result(inv)
			if d := wf.DAGs[inv.State]; d != nil && res.Error == nil {
				if err := d.CheckTaskResult(inv.Node, value.Plain(res.Output)); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return run.Options{
		FailsAtRead: failsAtRead,
		Retry:       func(string, string) run.RetryPolicy { return run.NoRetry },
		FailsAtCall: func(inv *run.Invoke) (string, bool) {
			if s.observe != nil {
				s.observe(inv)
			}
			if res := s.result(inv); res.Error != nil {
				return res.Error.Message, true
			}
			return "", false
		},
	}
}

// call is one reference run(input, opts) on the snapshot of prev.
func (s *scenario) call(wf *workflow.Workflow, prev *run.State, c call) (*run.State, error) {
	runID := s.runID
	if c.runID != "" {
		runID = c.runID
	}
	input := s.input
	if c.hasInput {
		input = c.input
	}
	msg := run.Message{Time: c.now, NoTime: !c.hasNow, RunID: runID, Input: input}
	s.results = map[attempt]*run.TaskResult{}
	var st *run.State
	var effects []run.Effect
	var err error
	if prev == nil {
		msg.Kind, msg.Event = run.KindStart, c.event
		st, effects, err = run.Apply(wf, nil, msg, s.options(wf, true))
		// The reference starts the chart (JF2012) before it compares the
		// expected generation; what follows the start runs after it.
		if g, ok := c.expected(0); err == nil && ok && g != 0 {
			return nil, stale
		}
	} else {
		if runID != prev.RunID {
			return nil, fault.NoPath(fault.JF2016, "invalid workflow snapshot")
		}
		if value.MustCanonical(value.Clone(input)) != value.MustCanonical(prev.Context.Input) {
			return nil, fault.NoPath(fault.JF2013, "workflow, lowering, input or task identity changed")
		}
		if g, ok := c.expected(prev.Generation); ok && g != prev.Generation {
			return nil, stale
		}
		if c.hasNow && c.now < prev.Control.Time {
			return nil, fault.NoPath(fault.JF2011, "workflow time must be finite and cannot move backwards")
		}
		if prev.Status == run.StatusDone {
			done := *prev
			done.Generation++
			return &done, nil
		}
		msg.Kind = run.KindWake
		if c.event != nil {
			msg.Kind, msg.Event = run.KindEvent, c.event
		}
		if prev, err = s.reload(prev); err != nil {
			return nil, err
		}
		st, effects, err = run.Apply(wf, prev, msg, s.options(wf, true))
	}
	if err != nil {
		return nil, err
	}
	if st, err = s.answer(wf, st, effects, c); err != nil {
		return nil, err
	}
	// A call's event that met no wait is gone with the call.
	st.Buffered = nil
	return st, nil
}

// answer runs the invoked mocks, feeding each result back, until no
// invocation is left. The reference runs a DAG's nodes as promises, so
// the order in which it meets their outcomes is a matter of timing, which
// answer models in microtask ticks: a mock is called as the task is
// invoked, and one that throws fails there and then; a result is read a
// tick later, when a checkpointed node refuses a value that is not JSON;
// a plain task's consumers start two ticks after that, a checkpointed
// one's only after its value is saved through the snapshot's write
// chain, one save after the other (saveTicks each). Results are fed in
// that order, ties broken by what
// fails first, then by invocation order, and the tasks a result invokes
// are called at the time it was fed. Inline nodes take no time here: the
// DAG step evaluates them when the result that readies them is fed.
// The results belong to the call: a wait they lead to reads the call's
// now, as the reference's loop does.
func (s *scenario) answer(wf *workflow.Workflow, st *run.State, effects []run.Effect, c call) (*run.State, error) {
	var pending []outcome
	seq, writes := 0, 0 // writes: the tick the write chain is free again
	call := func(invs []*run.Invoke, at int) {
		for _, inv := range invs {
			if s.observe != nil {
				s.observe(inv)
			}
			o := outcome{res: s.result(inv), seq: seq}
			seq++
			o.at, o.kind = settles(wf, inv, o.res, at)
			if o.kind == saved {
				start := max(o.at, writes)
				writes = start + saveTicks
				o.at = writes + 2
			}
			pending = append(pending, o)
		}
	}
	call(invokes(effects), 0)
	for len(pending) > 0 && st.Status == run.StatusRunning {
		next := 0
		for i, o := range pending {
			if o.before(pending[next]) {
				next = i
			}
		}
		o := pending[next]
		pending = append(pending[:next], pending[next+1:]...)
		msg := run.Message{Kind: run.KindResult, Time: c.now, NoTime: !c.hasNow, NoTick: true, Result: o.res}
		// a result due before the read of a task this one invokes (at
		// o.at+1) is fed first, and the answer loop orders the read
		readFirst := true
		for _, p := range pending {
			if p.at <= o.at {
				readFirst = false
			}
		}
		if s.stored && o.res.Error == nil {
			if _, ok := value.AppendGoJSONOrdered(nil, o.res.Output); !ok {
				s.inProcess = true
			}
		}
		cur, err := s.reload(st)
		if err != nil {
			return nil, err
		}
		after, more, err := run.Apply(wf, cur, msg, s.options(wf, readFirst))
		if errors.Is(err, run.ErrRejected) {
			continue // a sibling failed the activation first
		}
		if err != nil {
			return nil, err
		}
		st = after
		call(invokes(more), o.at)
	}
	return st, nil
}

// reload is st read back from its encoding when the test asks for it
// (runOptions.stored), as a dispatcher reads the run record, so that the
// simulator's answers check that the record holds everything a fleet's
// run reads. Once a mock has handed back a value that is not JSON (NaN,
// the empty marker), which no worker's result can be, the scenario is
// not one a fleet can run, and its states stay in memory from there on.
func (s *scenario) reload(st *run.State) (*run.State, error) {
	if !s.stored || s.inProcess {
		return st, nil
	}
	b, err := run.Encode(st)
	if err != nil {
		return nil, fmt.Errorf("a state of a run a fleet can run does not encode: %w", err)
	}
	return run.Decode(b)
}

// outcome is a mock's answer and when the reference meets it.
type outcome struct {
	res      *run.TaskResult
	at, kind int
	seq      int
}

func (o outcome) before(p outcome) bool {
	if o.at != p.at {
		return o.at < p.at
	}
	if o.kind != p.kind {
		return o.kind < p.kind
	}
	return o.seq < p.seq
}

// Outcome kinds, in the order the reference meets them within one tick.
const (
	throws  = iota // the handler threw as it was called
	refused        // a checkpoint refused the value
	plain          // the value goes on to the node's consumers
	saved          // the value goes on once saved
)

// saveTicks is how long one save holds the write chain: measured on the
// reference, a checkpointed task delays its consumers by more than one
// and a half plain task hops (three ticks each) and by at most two.
const saveTicks = 5

// settles is when (in ticks) and how the reference meets the outcome of
// a task called at tick at, a save aside.
func settles(wf *workflow.Workflow, inv *run.Invoke, res *run.TaskResult, at int) (int, int) {
	d := wf.DAGs[inv.State]
	switch {
	case res.Error != nil:
		return at, throws
	case d != nil && d.CheckTaskResult(inv.Node, value.Plain(res.Output)) != nil:
		return at + 1, refused
	case d != nil && d.Checkpoint(inv.Node):
		return at + 1, saved // read, then saved: answer queues the save
	}
	return at + 3, plain
}

func invokes(effects []run.Effect) []*run.Invoke {
	var out []*run.Invoke
	for _, e := range effects {
		if e.Invoke != nil {
			out = append(out, e.Invoke)
		}
	}
	return out
}

// result is inv's mock answer. The reducer may ask for it (FailsAtRead,
// FailsAtCall) before the answer loop feeds it; the mock runs once. The
// answers last one call: a failed call's state is dropped, and the next
// call may invoke the same attempt with another argument.
func (s *scenario) result(inv *run.Invoke) *run.TaskResult {
	k := attempt{inv.Activation, inv.Node, inv.Attempt}
	res, ok := s.results[k]
	if !ok {
		res = s.mock(inv)
		s.results[k] = res
	}
	return res
}

func (s *scenario) mock(inv *run.Invoke) *run.TaskResult {
	res := &run.TaskResult{Activation: inv.Activation, Node: inv.Node, Attempt: inv.Attempt}
	m, ok := s.tasks[inv.Task]
	if !ok {
		res.Error = &run.TaskError{Message: "no mock for task '" + inv.Task + "'"}
		return res
	}
	// with keeps the objects its query built in their order, and both
	// keep the empty marker a query left, as the reference's handler
	// gets them: the mock's queries read them through Holding
	input, with := inv.Given()
	scope := map[string]any{"with": with, "input": input}
	if m.hasError {
		fails := true
		if m.errorWhen != nil {
			var err error
			if fails, err = m.errorWhen.Within(nil).Holding().EBV(scope, nil); err != nil {
				res.Error = &run.TaskError{Message: err.Error()}
				return res
			}
		}
		if fails {
			res.Error = &run.TaskError{Message: m.err}
			return res
		}
	}
	if m.output == nil {
		res.Output = input
		return res
	}
	// the result is handed on as the query built it, as the reference's
	// handler returns it: its objects in their member order, the empty
	// marker where the query left one in an array or object it built
	out, ok, _, err := m.output.Within(nil).Holding().EvalMarked(scope, nil)
	if err != nil {
		res.Error = &run.TaskError{Message: err.Error()}
		return res
	}
	if ok {
		res.Output = out
	}
	return res
}

// expected is the generation the call expects, given the resumed one.
func (c call) expected(previous int64) (int64, bool) {
	if !c.hasGeneration {
		return 0, false
	}
	if f, ok := c.generation.(float64); ok {
		return int64(f), true
	}
	return previous, true
}

var stale = fault.NoPath(fault.JF2014, "event or resume observed a stale generation")
