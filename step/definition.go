package step

import (
	"fmt"
	"time"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
)

// Program is one compiled workflow revision bound to the reducer.
type Program interface {
	Apply(st *run.State, msg run.Message) (*run.State, []run.Effect, error)
}

// Definition is a loaded workflow revision.
type Definition struct {
	Name, Revision string
	Program        Program
	// Retention is how long the deployment keeps its settled runs (0:
	// for ever); nil leaves it to the dispatchers' default. It shapes no
	// record: dispatchers read it when they schedule a removal.
	Retention *time.Duration
	// Archive says whether runs removed by retention are archived first;
	// nil leaves it to the dispatchers' default.
	Archive *bool
	// Children binds task versions ("task@version") to workflows:
	// invoking one starts a child run instead of publishing an
	// invocation (child.go). It shapes records: every dispatcher and
	// replay of the revision reads it from the deployment's policy.
	Children map[string]ChildBinding
	// Queue says which task versions' invocations wait in the queue
	// stream, with what priority and key (queue.go); nil queues none. It
	// shapes records: every dispatcher and replay of the revision reads
	// it from the deployment's policy.
	Queue QueueFunc
}

// Engine is the reducer (run.Apply) over one compiled workflow with the
// host options of its deployment.
type Engine struct {
	Workflow *workflow.Workflow
	Options  run.Options
}

// Apply is run.Apply.
func (p Engine) Apply(st *run.State, msg run.Message) (*run.State, []run.Effect, error) {
	return run.Apply(p.Workflow, st, msg, p.Options)
}

// safeApply runs the reducer, turning a panic into a permanent failure so
// that one poisonous input cannot take the process down.
func safeApply(p Program, st *run.State, msg run.Message) (next *run.State, effects []run.Effect, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: reducer panic: %v", ErrPermanent, r)
		}
	}()
	return p.Apply(st, msg)
}
