package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jetflow/jetflow/policy"
)

// checkChildren refuses a deployment whose policy binds a task version
// the document never invokes, or binds one to a workflow that is not
// deployed (docs/CHILDREN.md): a child run of it could never start.
func (r *Registry) checkChildren(ctx context.Context, d Deployment) error {
	ch := d.Policy.Children()
	for _, key := range d.Policy.ChildKeys() {
		c := ch[key]
		ptr := policy.ChildPointer(key)
		if !slices.ContainsFunc(d.Tasks, func(t TaskRef) bool { return t.Task+"@"+t.Version == key }) {
			return fmt.Errorf("registry: deploy workflow %q: %w", d.Name, &policy.Error{
				Pointer: ptr,
				Reason:  fmt.Sprintf("the document invokes no task %s (its tasks: %s)", key, taskList(d.Tasks)),
			})
		}
		if c.Workflow == d.Name {
			continue // a workflow may start runs of itself (recursion), deployed by this very deploy
		}
		_, err := r.Get(ctx, c.Workflow)
		if errors.Is(err, ErrWorkflowNotFound) || errors.Is(err, ErrDocumentNotFound) {
			return fmt.Errorf("registry: deploy workflow %q: %w", d.Name, &policy.Error{
				Pointer: ptr + "/workflow",
				Reason:  fmt.Sprintf("workflow %q is not deployed: deploy it before a workflow that binds a task to it", c.Workflow),
			})
		}
		if err != nil {
			return fmt.Errorf("registry: deploy workflow %q: check child binding %s: %w", d.Name, ptr, err)
		}
	}
	return nil
}

func taskList(tasks []TaskRef) string {
	if len(tasks) == 0 {
		return "none"
	}
	s := ""
	for i, t := range tasks {
		if i > 0 {
			s += ", "
		}
		s += t.Task + "@" + t.Version
	}
	return s
}
