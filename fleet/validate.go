package fleet

import (
	"strconv"

	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/subjects"
)

// Validate compiles a workflow document with the engine and lists the
// task versions it invokes; it is the registry's check before a deploy.
// Task names, versions and awaited event types must also be usable in
// subjects, or no worker could serve them and no event could reach them.
func Validate(doc any) (registry.Info, error) {
	wf, err := workflow.Compile(doc, workflow.Options{})
	if err != nil {
		return registry.Info{}, err
	}
	for _, id := range wf.Lowered.States {
		spec := wf.Lowered.Specs[id]
		for i, w := range spec.On {
			if err := subjects.CheckEventType(w.Event); err != nil {
				return registry.Info{}, &PathError{Path: id + "/on/" + strconv.Itoa(i) + "/event", Err: err}
			}
		}
	}
	var info registry.Info
	for _, id := range wf.Lowered.Work {
		d := wf.DAGs[id]
		for _, node := range d.Nodes() {
			n, _ := d.Node(node)
			if n.Task == "" {
				continue
			}
			if err := subjects.CheckTask(n.Task); err != nil {
				return registry.Info{}, &PathError{Path: id + "/work", Err: err}
			}
			if err := subjects.CheckVersion(n.Version); err != nil {
				return registry.Info{}, &PathError{Path: id + "/work", Err: err}
			}
			info.Tasks = append(info.Tasks, registry.TaskRef{Task: n.Task, Version: n.Version})
		}
	}
	return info, nil
}

// PathError is a deploy refusal that is not the engine's: a task name or
// version that cannot be a subject token, at the work state that names it.
type PathError struct {
	Path string
	Err  error
}

func (e *PathError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *PathError) Unwrap() error { return e.Err }
