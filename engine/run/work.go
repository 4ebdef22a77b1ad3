package run

import (
	"errors"
	"maps"
	"strings"

	"github.com/jetflow/jetflow/engine/dag"
	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/engine/workflow"
)

// work runs the active work state's DAG as far as it can without a
// worker. blocked reports that tasks are in flight.
func (r *reducer) work(id string) (blocked bool, err error) {
	d := r.wf.DAGs[id]
	inText := "" // the pending input's canonical text, once computed
	if r.st.Pending == nil {
		// the reference copies the work input as canonical JSON as it
		// evaluates it: the empty marker left in an array or object the
		// query built (a symbol there), NaN or ±Infinity refuse
		v, ok, _, err := r.wf.Inputs[id].Within(&r.budget).EvalMarked(r.workScope(), nil)
		if err == nil {
			if !ok {
				v = nil
			}
			inText, err = value.Canonical(v)
		}
		if err != nil {
			return false, fault.Wrap(fault.JF2016, "work input evaluation failed", id+"/input", err)
		}
		// Plain is the only copy needed: what a query returns and what a
		// state holds are shared, never written to (State.copy)
		visit, _ := r.st.Context.Visits[id].(float64)
		r.st.Pending = &Pending{State: id, Visit: int64(visit), Input: value.Plain(v), Values: map[string]any{}}
		r.st.Work = nil
		r.persist()
	}
	p := r.st.Pending
	if p.HasResult {
		return false, r.complete(id, p.Result, nil)
	}
	if r.st.Work == nil {
		if p.Identity == nil {
			in := inText
			if in == "" {
				if in, err = value.Canonical(p.Input); err != nil {
					return false, fault.Wrap(fault.JF2016, "work input is not JSON", id+"/input", err)
				}
			}
			// The reference's DAG provenance (dag.Identity), from texts
			// the compiled workflow already holds.
			versions := make(map[string]any, len(d.TaskVersions()))
			for k, v := range d.TaskVersions() {
				versions[k] = v
			}
			p.Identity = map[string]any{
				"revision": r.wf.Revisions.DAGs[id], "document": r.wf.DAGTexts[id],
				"input": in, "taskVersions": versions,
			}
			r.persist()
		}
		r.st.Work = &Work{
			Activation: activationKey(r.st.RunID, id, float64(p.Visit)),
			Values:     d.Restore(p.Values), Running: map[string]*Attempt{},
			Base: int(r.st.AttemptFloor),
		}
		if rd := r.redriven; rd != nil {
			r.redriven, r.st.Kept = nil, nil
			r.st.Work.Base = max(rd.base, r.st.Work.Base)
			for _, node := range sortedKeys(rd.kept) {
				v := rd.kept[node]
				if value.HasObject(v) {
					if r.st.Work.Ordered == nil {
						r.st.Work.Ordered = Ordered{}
					}
					r.st.Work.Ordered[node] = v
					v = value.Plain(v)
				}
				r.st.Work.Values[node] = v
			}
		}
	}
	return r.schedule(id, r.st.Work.Ordered)
}

// schedule computes what the DAG can without a worker and invokes the
// tasks that became ready. ordered is the activation's ordered values
// (Work.Ordered), with a result just accepted as its handler built it.
func (r *reducer) schedule(id string, ordered map[string]any) (blocked bool, err error) {
	d, w, p := r.wf.DAGs[id], r.st.Work, r.st.Pending
	running := make(map[string]bool, len(w.Running))
	for node := range w.Running {
		running[node] = true
	}
	wave := dag.Wave{Marked: w.Marked}
	if r.opts.FailsAtRead != nil {
		wave.FailsAtRead = func(inv dag.Invocation) error {
			return r.opts.FailsAtRead(r.invocation(id, inv, w.Base+1))
		}
	}
	plan, err := d.ScheduleWave(&r.budget, p.Input, w.Values, ordered, running, wave)
	if err == nil {
		w.Ordered, w.Marked = plan.Ordered, plan.Marked
	}
	for _, nv := range plan.Values {
		w.Values[nv.ID] = nv.Value
		if nv.Checkpoint {
			p.Values[nv.ID] = nv.Value
			r.persist()
		}
	}
	if err != nil {
		return false, r.workFailed(id, r.failedFirst(id, plan.Tasks, err))
	}
	for _, inv := range plan.Tasks {
		w.Running[inv.Node] = &Attempt{Attempt: w.Base + 1}
		r.invoke(id, inv, w.Base+1)
	}
	if plan.Done {
		p.Result, p.HasResult = plan.Output, true
		r.persist()
		return false, r.complete(id, plan.Output, nil)
	}
	if len(w.Running) == 0 {
		return false, fault.New(fault.JF2016, "work could not progress", id)
	}
	return true, nil
}

// failedFirst is the failure the reference reports when a DAG step fails
// at an inline node (err) after starting tasks: the first of those tasks
// whose handler fails as it is called (Options.FailsAtCall), else err.
func (r *reducer) failedFirst(state string, started []dag.Invocation, err error) error {
	if r.opts.FailsAtCall == nil {
		return err
	}
	for _, inv := range started {
		if msg, fails := r.opts.FailsAtCall(r.invocation(state, inv, r.st.Work.Base+1)); fails {
			return r.wf.DAGs[state].TaskFailed(inv.Node, msg)
		}
	}
	return err
}

func (r *reducer) invocation(state string, inv dag.Invocation, attempt int) *Invoke {
	with, hasWith := inv.Arg["with"]
	return &Invoke{
		Activation: r.st.Work.Activation, State: state, Node: inv.Node, Task: inv.Task,
		Version: inv.Version, Attempt: attempt, Input: inv.Arg["input"], With: with, HasWith: hasWith && with != nil,
		given: inv.MarkedArg(),
	}
}

func (r *reducer) invoke(state string, inv dag.Invocation, attempt int) {
	e := r.invocation(state, inv, attempt)
	if a := r.st.Work.Running[inv.Node]; a != nil {
		r.setDeadline(inv.Task, inv.Version, a)
		e.Deadline = a.Deadline
	}
	r.effects = append(r.effects, Effect{Invoke: e})
}

// complete leaves a work state: its result (or caught error) becomes the
// run's data, as the reference's work step ends.
func (r *reducer) complete(id string, result any, caught map[string]any) error {
	data := value.Clone(result)
	event := workflow.EventDone
	if caught != nil {
		data = map[string]any{"error": caught}
		event = workflow.EventError
	}
	ctx := r.contextValue()
	ctx["data"] = data
	res, err := r.wf.Chart.Step(r.st.Control, event, r.stepOpts(ctx, nil))
	if err != nil {
		return err
	}
	return r.apply(res, func() {
		r.st.Context.Data = data
		r.st.Context.Results[id] = data
		r.st.Pending = nil
		r.st.Work = nil
	})
}

// workFailed is a DAG failure: a workflow that catches it moves on with
// the error as data, as the reference's catch does; otherwise the run
// fails.
func (r *reducer) workFailed(id string, err error) error {
	var fe *fault.Error
	spec := r.wf.Spec(id)
	if !errors.As(err, &fe) || fe.Code != fault.JF2006 || spec.Catch == "" {
		return err
	}
	var node any
	if fe.NodeID != "" {
		node = fe.NodeID
	}
	return r.complete(id, nil, map[string]any{"code": string(fe.Code), "message": fe.Error(), "nodeId": node})
}

// result applies a worker's report on one task node.
func (r *reducer) result(res *TaskResult) error {
	w := r.st.Work
	if res == nil {
		return reject("a result message needs a body")
	}
	if w == nil || res.Activation != w.Activation {
		return reject("activation %s is not in flight", res.Activation)
	}
	a := w.Running[res.Node]
	if a == nil || a.Waiting || a.Attempt != res.Attempt {
		return reject("node %q attempt %d of activation %s is not in flight", res.Node, res.Attempt, res.Activation)
	}
	id := r.active()
	d := r.wf.DAGs[id]
	if err := r.tick(); err != nil {
		return err
	}
	if res.Error != nil {
		return r.taskFailed(id, res.Node, a, res.Error)
	}
	// The result as its handler built it (objects in their member order,
	// value.DecodeOrdered) is what the nodes it readies read now; what
	// is stored is plain, as every stored value.
	out := value.Clone(res.Output)
	ordered := map[string]any(w.Ordered)
	if value.HasObject(out) {
		ordered = maps.Clone(ordered)
		if ordered == nil {
			ordered = map[string]any{}
		}
		ordered[res.Node] = out
		out = value.Plain(out)
	}
	if err := d.CheckTaskResult(res.Node, out); err != nil {
		return r.workFailed(id, err)
	}
	delete(w.Running, res.Node)
	w.Values[res.Node] = out
	if d.Checkpoint(res.Node) {
		r.st.Pending.Values[res.Node] = out
		r.persist()
	}
	blocked, err := r.schedule(id, ordered)
	if err != nil || blocked {
		return err
	}
	return r.drive()
}

// tick moves the chart's clock to now: time passes while tasks run, and
// later delays count from the input that ends a wait for a task.
func (r *reducer) tick() error {
	if r.msg.NoTime || r.msg.NoTick || r.now <= r.st.Control.Time {
		return nil
	}
	step, err := r.wf.Chart.Step(r.st.Control, workflow.EventClock, r.clockOpts())
	if err != nil {
		return err
	}
	r.st.Control = step.State
	return nil
}

// taskFailed applies one failed attempt of node: another attempt after
// the retry policy's backoff, or the node's failure, which the work
// state's catch may take.
func (r *reducer) taskFailed(id, node string, a *Attempt, e *TaskError) error {
	d := r.wf.DAGs[id]
	info, _ := d.Node(node)
	policy := r.policy(info.Task, info.Version)
	if policy.retries(e, r.st.Work.ordinal(a)) {
		r.retryLater(node, a, policy, e)
		return nil
	}
	return r.continueAfter(r.workFailed(id, d.TaskFailed(node, e.Message)))
}

// continueAfter drives on once a work state was left.
func (r *reducer) continueAfter(err error) error {
	if err != nil {
		return err
	}
	return r.drive()
}

// retryTimer re-invokes a node whose retry delay is over.
func (r *reducer) retryTimer(t *TimerFire) error {
	w := r.st.Work
	if w == nil {
		return reject("retry timer %q belongs to no activation in flight", t.ID)
	}
	node, ok := w.Retries[t.ID]
	a := w.Running[node]
	if !ok || a == nil || !a.Waiting || t.Deadline != a.RetryAt {
		return reject("retry timer %q is no longer armed", t.ID)
	}
	if !r.msg.NoTime && r.now < a.RetryAt-MaxTimerSkewMs {
		return reject("retry timer %q fired at %.0f, before its deadline %.0f", t.ID, r.now, a.RetryAt)
	}
	delete(w.Retries, t.ID)
	a.Waiting, a.RetryAt = false, 0
	a.Attempt++
	id := r.active()
	running := map[string]bool{}
	for n := range w.Running {
		if n != node {
			running[n] = true
		}
	}
	plan, err := r.wf.DAGs[id].ScheduleWave(&r.budget, r.st.Pending.Input, w.Values, w.Ordered, running, dag.Wave{Marked: w.Marked})
	if err != nil {
		return r.continueAfter(r.workFailed(id, err))
	}
	for _, inv := range plan.Tasks {
		if inv.Node == node {
			r.invoke(id, inv, a.Attempt)
			return nil
		}
	}
	return fault.New(fault.JF2016, "retried node '"+node+"' is not ready", id)
}

func isRetryTimer(id string) bool { return strings.HasPrefix(id, "r") }
