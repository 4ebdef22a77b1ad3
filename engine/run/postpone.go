package run

import (
	"slices"
	"strings"

	"github.com/jetflow/jetflow/engine/dag"
	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/workflow"
)

// While an operator pauses a task version for the whole deployment, its
// invocations wait undelivered in the task stream, and their attempts
// must not time out for it. When a deadline fire finds such attempts due,
// the dispatcher does not apply it: it sends the run a postpone input
// for that task version instead, which starts each due attempt over (a
// fresh deadline, the same attempt number, its invocation published
// again, since the one waiting carries the old deadline workers honour).
// No attempt is spent, and the deadline timer stays armed, so the run
// keeps its way forward; the fire, applied after, is stale.

// KindPostpone restarts the due attempts of one task version.
const KindPostpone Kind = "postpone"

// Postpone names the task version whose due attempts start over.
type Postpone struct {
	Task    string `json:"task"`
	Version string `json:"version"`
}

// TaskVersion names one version of a task.
type TaskVersion struct {
	Task, Version string
}

// DueTasks returns the task versions of the attempts in flight whose
// deadline is at or before now, sorted: those a deadline fire at now
// would fail.
func DueTasks(wf *workflow.Workflow, st *State, now float64) []TaskVersion {
	if st.Status != StatusRunning || st.Work == nil {
		return nil
	}
	info := wf.DAGs[st.Control.Active[0]]
	if info == nil {
		return nil
	}
	var out []TaskVersion
	for _, node := range sortedKeys(st.Work.Running) {
		a := st.Work.Running[node]
		if a.Waiting || a.Deadline == 0 || a.Deadline > now {
			continue
		}
		if n, ok := info.Node(node); ok && !slices.Contains(out, TaskVersion{n.Task, n.Version}) {
			out = append(out, TaskVersion{n.Task, n.Version})
		}
	}
	slices.SortFunc(out, func(a, b TaskVersion) int {
		if c := strings.Compare(a.Task, b.Task); c != 0 {
			return c
		}
		return strings.Compare(a.Version, b.Version)
	})
	return out
}

func (r *reducer) postpone(p *Postpone) error {
	w := r.st.Work
	if p == nil || w == nil || r.st.Status != StatusRunning {
		return reject("run %q has no attempt in flight to postpone", r.st.RunID)
	}
	id := r.active()
	info := r.wf.DAGs[id]
	var due []string
	for _, node := range sortedKeys(w.Running) {
		a := w.Running[node]
		n, _ := info.Node(node)
		if !a.Waiting && a.Deadline > 0 && a.Deadline <= r.now && n.Task == p.Task && n.Version == p.Version {
			due = append(due, node)
		}
	}
	if len(due) == 0 {
		return reject("no attempt of task %s@%s is past its deadline", p.Task, p.Version)
	}
	if err := r.tick(); err != nil {
		return err
	}
	running := map[string]bool{}
	for n := range w.Running {
		if !slices.Contains(due, n) {
			running[n] = true
		}
	}
	plan, err := info.ScheduleWave(&r.budget, r.st.Pending.Input, w.Values, w.Ordered, running, dag.Wave{Marked: w.Marked})
	if err != nil {
		return r.continueAfter(r.workFailed(id, err))
	}
	for _, node := range due {
		i := slices.IndexFunc(plan.Tasks, func(t dag.Invocation) bool { return t.Node == node })
		if i < 0 {
			return fault.New(fault.JF2016, "postponed node '"+node+"' is not ready", id)
		}
		a := w.Running[node]
		a.Scheduled = 0 // the attempt starts over: its schedule-to-close too
		r.invoke(id, plan.Tasks[i], a.Attempt)
	}
	return nil
}

// TaskOf returns the task version of node in activation, when that is
// the work in flight of st: the task a result for it answers.
func TaskOf(wf *workflow.Workflow, st *State, activation, node string) (TaskVersion, bool) {
	if st == nil || st.Work == nil || st.Work.Activation != activation || len(st.Control.Active) == 0 {
		return TaskVersion{}, false
	}
	info := wf.DAGs[st.Control.Active[0]]
	if info == nil {
		return TaskVersion{}, false
	}
	n, ok := info.Node(node)
	if !ok {
		return TaskVersion{}, false
	}
	return TaskVersion{n.Task, n.Version}, true
}
