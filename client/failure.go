package client

import (
	"strings"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
)

// FailedTask names what a run's task failure is about in the author's
// terms: the engine reports it at the DAG's node (/nodes/task, "node
// 'task' failed"), which a work state running one task calls "task"
// whatever its task, and two states may share.
type FailedTask struct {
	// State is the work state's id (a JSON Pointer); Node the node in
	// its DAG; Task the node's task as task@version ("" when the
	// definition is unknown).
	State string `json:"state"`
	Node  string `json:"node"`
	Task  string `json:"task,omitempty"`
	// Code and Message are the worker's error as its result carried it,
	// when it could be read.
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// FailedTaskOf names the task st's failure is about, or nil when the
// failure is not a task node's (a path outside /nodes/, no work state).
// wf may be nil.
func FailedTaskOf(wf *workflow.Workflow, st *run.State) *FailedTask {
	if st.Error == nil {
		return nil
	}
	node, ok := strings.CutPrefix(st.Error.Path, "/nodes/")
	if !ok || node == "" || strings.Contains(node, "/") {
		return nil
	}
	state := activeWork(st)
	if state == "" {
		return nil
	}
	return &FailedTask{State: state, Node: node, Task: taskOf(wf, state, node, nil)}
}

// NodeFailed is the engine's own wording of a node's failure, "node 'x'
// failed: ", which the text output replaces by the state and task.
func NodeFailed(node string) string { return "node '" + node + "' failed: " }
