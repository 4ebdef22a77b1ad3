// Package dag compiles jaren-dag 0.1 documents (FLOW-FORMAT §6–7 of
// @jarenjs/flow 0.91.4) and schedules their runs as a pure function: given
// the activation input and the node values known so far, Schedule computes
// the inline nodes (input, const, query, output, edge selects and task
// `with`s) and names the task nodes ready to be invoked, with the exact
// argument the reference hands a handler. Nothing here waits, stores or
// dispatches; the caller runs the tasks and calls Schedule again.
package dag

import (
	"github.com/jetflow/jetflow/engine/jslt"
	"github.com/jetflow/jetflow/engine/query"
)

// Kind is a node kind.
type Kind string

// The node kinds of jaren-dag 0.1.
const (
	KindInput  Kind = "input"
	KindOutput Kind = "output"
	KindConst  Kind = "const"
	KindQuery  Kind = "query"
	KindJSLT   Kind = "jslt"
	KindTask   Kind = "task"
)

// kinds is the reference's order, which its error message lists.
var kinds = []Kind{KindInput, KindOutput, KindConst, KindQuery, KindJSLT, KindTask}

// Options tune Compile. The zero value compiles against no registry.
type Options struct {
	// Tasks is an optional registry of task name to handler version, ""
	// standing for a handler registered without one (the reference's bare
	// function). When nil, task names and declared versions are taken as
	// written (jetflow's handlers are remote workers); when set, a task
	// naming no entry is JF0018 and a declared version the entry does not
	// match is JF0019. Default nil.
	Tasks map[string]string
	// Revision is the provenance revision of Identity. Default: the
	// workflow's, HashContent of the document's canonical text.
	Revision string
}

// NodeInfo describes one declared node.
type NodeInfo struct {
	ID   string
	Kind Kind
	// Path is the node's JSON Pointer in the document, /nodes/<id>.
	Path       string
	Checkpoint bool
	// Task and Version are set for task nodes; Version is "" when the node
	// declares none.
	Task    string
	Version string
}

// DAG is a compiled document, safe for concurrent use.
type DAG struct {
	doc      any
	nodes    []*node // document order
	index    map[string]int
	output   int
	byRank   []int // node indices in the reference's evaluation order
	edges    int   // inbound edges in all
	versions map[string]string
	revision string
}

type node struct {
	NodeInfo
	value   any              // const
	query   *query.Query     // query
	jslt    *jslt.Stylesheet // jslt
	with    *query.Query     // task, nil when absent
	inbound []inEdge         // edge document order
	ported  bool
	// portsSorted: the ports in edge order are in value.Keys order, so
	// a map of them walks as the reference's object of ports does
	portsSorted bool
	consumers   []int // distinct consumer indices
	rank        int
}

type inEdge struct {
	from   int
	port   string
	ported bool
	sel    *query.Query // nil when absent
	index  int          // the edge's index in the document
}

// Nodes returns the declared node ids in document order.
func (d *DAG) Nodes() []string {
	ids := make([]string, len(d.nodes))
	for i, n := range d.nodes {
		ids[i] = n.ID
	}
	return ids
}

// Output returns the output node's id.
func (d *DAG) Output() string { return d.nodes[d.output].ID }

// Node describes the node id.
func (d *DAG) Node(id string) (NodeInfo, bool) {
	i, ok := d.index[id]
	if !ok {
		return NodeInfo{}, false
	}
	return d.nodes[i].NodeInfo, true
}

// Checkpoint reports whether the node id declares checkpoint: true, so that
// its value is saved when produced and restored on resume.
func (d *DAG) Checkpoint(id string) bool {
	i, ok := d.index[id]
	return ok && d.nodes[i].Checkpoint
}

// Durable reports whether any node declares a checkpoint.
func (d *DAG) Durable() bool {
	for _, n := range d.nodes {
		if n.Checkpoint {
			return true
		}
	}
	return false
}
