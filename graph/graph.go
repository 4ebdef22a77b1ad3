// Package graph draws a compiled workflow: its statechart (the author's
// states and transitions, nested flows as clusters) and the DAG of each
// work state, optionally marked with where a run is (active and visited
// states, visit counts, each task node's status and attempt). A Diagram
// renders as Mermaid or Graphviz dot text, or as SVG laid out here in Go,
// so that the console needs no diagram library in the browser. Everything
// is a pure function of its arguments.
package graph

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/engine/workflow"
)

// Kind is what a diagram shows.
type Kind string

// Diagram kinds.
const (
	KindStatechart Kind = "statechart"
	KindDAG        Kind = "dag"
)

// Shape is how a node is drawn; it follows the state's form or the DAG
// node's kind.
type Shape string

// Node shapes.
const (
	ShapeStart  Shape = "start" // a scope's initial pseudo-state
	ShapeWork   Shape = "work"
	ShapeChoose Shape = "choose"
	ShapeWait   Shape = "wait"
	ShapeFlow   Shape = "flow"
	ShapeFinal  Shape = "final"
	ShapeInput  Shape = "input"
	ShapeOutput Shape = "output"
	ShapeTask   Shape = "task"
	ShapeQuery  Shape = "query"
	ShapeConst  Shape = "const"
	ShapeJSLT   Shape = "jslt"
)

// Status marks a node with a run's progress. States are active, visited
// or failed; DAG nodes are waiting, invoked, retrying, done or failed.
type Status string

// Node statuses; "" is unmarked.
const (
	StatusNone     Status = ""
	StatusActive   Status = "active"
	StatusVisited  Status = "visited"
	StatusWaiting  Status = "waiting"
	StatusInvoked  Status = "invoked"
	StatusRetrying Status = "retrying"
	StatusDone     Status = "done"
	StatusFailed   Status = "failed"
)

// EdgeKind says why an edge exists; renderers style by it.
type EdgeKind string

// Edge kinds.
const (
	EdgeInitial   EdgeKind = "initial"
	EdgeThen      EdgeKind = "then"
	EdgeCatch     EdgeKind = "catch"
	EdgeChoice    EdgeKind = "choice"
	EdgeOtherwise EdgeKind = "otherwise"
	EdgeEvent     EdgeKind = "event"
	EdgeAfter     EdgeKind = "after"
	EdgeData      EdgeKind = "data" // a DAG edge
)

// Diagram is a drawable graph.
type Diagram struct {
	Kind Kind
	// Title names the workflow (and the work state, for a DAG).
	Title string
	Root  Scope
}

// Scope is one level of nodes: the top level, or a nested flow's states.
// Edges join nodes of the same scope only (workflow references are local
// to their states object).
type Scope struct {
	Nodes []*Node
	Edges []Edge
}

// Node is a state or a DAG node.
type Node struct {
	// ID is the state id (a JSON Pointer) or the DAG node id; unique in
	// the diagram. A start pseudo-node's ID is its scope's id plus "#start".
	ID string
	// Label is the display name: the state's own name, or the node id.
	Label string
	// Detail is a second line: the task, the event waited for, a kind.
	Detail string
	Shape  Shape
	Status Status
	// Visits counts entries into a state (0: not shown).
	Visits int64
	// Attempt is a task node's attempt in flight or last made (0: not
	// shown).
	Attempt int
	// Inner holds a nested flow's states.
	Inner *Scope
}

// Edge is a transition or a DAG data edge. Edges between the same two
// nodes are merged, their labels joined.
type Edge struct {
	From, To string
	Label    string
	Kind     EdgeKind
}

// Marks place a run on a statechart.
type Marks struct {
	// Active lists the active state ids (the leaf and, implicitly, its
	// enclosing flows).
	Active []string
	// Failed lists states where the run failed.
	Failed []string
	// Visits counts entries by state id.
	Visits map[string]int64
}

// NodeMark is one DAG node's status.
type NodeMark struct {
	Status  Status
	Attempt int
}

// Statechart draws wf's states. m may be nil.
func Statechart(wf *workflow.Workflow, m *Marks) *Diagram {
	l := wf.Lowered
	d := &Diagram{Kind: KindStatechart, Title: l.Revision}
	if m == nil {
		m = &Marks{}
	}
	active, failed := map[string]bool{}, map[string]bool{}
	for _, id := range m.Active {
		// An active leaf makes every enclosing flow active too.
		for s := l.Specs[id]; s != nil; s = l.Specs[s.Parent] {
			active[s.ID] = true
		}
	}
	for _, id := range m.Failed {
		failed[id] = true
	}
	scopes := map[string]*Scope{"": &d.Root}
	for _, id := range l.States {
		s := l.Specs[id]
		n := &Node{ID: id, Label: stateName(id), Shape: shapeOf(s.Kind), Detail: stateDetail(wf, s), Visits: m.Visits[id]}
		switch {
		case failed[id]:
			n.Status = StatusFailed
		case active[id]:
			n.Status = StatusActive
		case n.Visits > 0:
			n.Status = StatusVisited
		}
		if s.Kind == workflow.KindFlow {
			n.Inner = &Scope{}
			scopes[id] = n.Inner
		}
		scope := scopes[s.Parent]
		scope.Nodes = append(scope.Nodes, n)
	}
	// Each scope starts with its initial pseudo-state.
	for parent, scope := range scopes {
		initial := l.Initial
		if parent != "" {
			initial = l.Specs[parent].Initial
		}
		start := &Node{ID: parent + "#start", Shape: ShapeStart}
		scope.Nodes = append([]*Node{start}, scope.Nodes...)
		scope.Edges = append(scope.Edges, Edge{From: start.ID, To: initial, Kind: EdgeInitial})
	}
	for _, id := range l.States {
		s := l.Specs[id]
		scope := scopes[s.Parent]
		scope.Edges = append(scope.Edges, transitions(s)...)
	}
	for _, scope := range scopes {
		scope.Edges = mergeEdges(scope.Edges)
	}
	return d
}

func transitions(s *workflow.Spec) []Edge {
	var out []Edge
	add := func(to, label string, kind EdgeKind) {
		out = append(out, Edge{From: s.ID, To: to, Label: label, Kind: kind})
	}
	switch s.Kind {
	case workflow.KindWork, workflow.KindFlow:
		add(s.Then, "", EdgeThen)
		if s.Catch != "" {
			add(s.Catch, "catch", EdgeCatch)
		}
	case workflow.KindChoose:
		for _, c := range s.Choose {
			add(c.To, guardText(c.Guard), EdgeChoice)
		}
		add(s.Otherwise, "otherwise", EdgeOtherwise)
	case workflow.KindOn:
		for _, w := range s.On {
			label := w.Event
			if w.HasGuard {
				label += " [" + guardText(w.Guard) + "]"
			}
			add(w.To, label, EdgeEvent)
		}
		if s.After != nil {
			add(s.After.To, "after "+Millis(s.After.Ms), EdgeAfter)
		}
	}
	return out
}

// mergeEdges joins edges between the same two nodes, keeping the first's
// kind and position.
func mergeEdges(edges []Edge) []Edge {
	var out []Edge
	at := map[[2]string]int{}
	for _, e := range edges {
		k := [2]string{e.From, e.To}
		if i, ok := at[k]; ok {
			if e.Label != "" {
				out[i].Label = joinLabel(out[i].Label, e.Label)
			}
			continue
		}
		at[k] = len(out)
		out = append(out, e)
	}
	return out
}

func joinLabel(a, b string) string {
	if a == "" {
		return b
	}
	return a + " | " + b
}

func shapeOf(k workflow.Kind) Shape {
	switch k {
	case workflow.KindWork:
		return ShapeWork
	case workflow.KindChoose:
		return ShapeChoose
	case workflow.KindOn:
		return ShapeWait
	case workflow.KindFlow:
		return ShapeFlow
	}
	return ShapeFinal
}

// stateName is the last segment of a state id, unescaped.
func stateName(id string) string {
	seg := id[strings.LastIndexByte(id, '/')+1:]
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(seg)
}

func stateDetail(wf *workflow.Workflow, s *workflow.Spec) string {
	switch s.Kind {
	case workflow.KindWork:
		d := wf.DAGs[s.ID]
		var tasks []string
		for _, id := range d.Nodes() {
			if info, _ := d.Node(id); info.Task != "" {
				tasks = append(tasks, info.Task+"@"+info.Version)
			}
		}
		if raw, _ := s.Raw()["work"].(map[string]any); raw != nil && raw["dag"] != nil {
			if len(tasks) == 1 {
				return "dag: 1 task"
			}
			return fmt.Sprintf("dag: %d tasks", len(tasks))
		}
		return strings.Join(tasks, ", ")
	case workflow.KindChoose:
		return "choose"
	case workflow.KindOn:
		var events []string
		for _, w := range s.On {
			events = append(events, w.Event)
		}
		if s.After != nil {
			events = append(events, Millis(s.After.Ms))
		}
		return "wait: " + strings.Join(events, ", ")
	case workflow.KindFlow:
		return "flow"
	}
	return "final"
}

// guardText is a guard's canonical JSON.
func guardText(g any) string {
	s, err := value.Canonical(g)
	if err != nil {
		s = "guard"
	}
	// Whole as the SVG wraps it (label.go); only a longer guard is cut.
	return Shorten(s, labelLineRunes*maxLabelLines)
}

// Shorten cuts s to at most n runes, ending in an ellipsis when cut.
func Shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Millis formats a delay in milliseconds: 250ms, 60s, 1m30s, 2h.
func Millis(ms float64) string {
	if ms < 1000 || ms != float64(int64(ms)) || int64(ms)%1000 != 0 {
		return value.NumberString(ms) + "ms"
	}
	s := int64(ms) / 1000
	var b strings.Builder
	for _, u := range []struct {
		n    int64
		unit string
	}{{3600, "h"}, {60, "m"}, {1, "s"}} {
		if s >= u.n {
			b.WriteString(strconv.FormatInt(s/u.n, 10) + u.unit)
			s %= u.n
		}
	}
	return b.String()
}

// DAG draws the DAG of work state stateID. marks may be nil.
func DAG(wf *workflow.Workflow, stateID string, marks map[string]NodeMark) (*Diagram, error) {
	dg := wf.DAGs[stateID]
	if dg == nil {
		return nil, fmt.Errorf("graph: %q is not a work state of workflow %q (work states: %s)",
			stateID, wf.Lowered.Revision, strings.Join(wf.Lowered.Work, ", "))
	}
	d := &Diagram{Kind: KindDAG, Title: stateName(stateID)}
	for _, id := range dg.Nodes() {
		info, _ := dg.Node(id)
		n := &Node{ID: id, Label: id, Shape: Shape(info.Kind), Detail: string(info.Kind)}
		if info.Task != "" {
			n.Detail = info.Task + "@" + info.Version
		}
		if mk, ok := marks[id]; ok {
			n.Status, n.Attempt = mk.Status, mk.Attempt
		}
		d.Root.Nodes = append(d.Root.Nodes, n)
	}
	edges, _ := wf.Lowered.DAGs[stateID]["edges"].([]any)
	for _, raw := range edges {
		e, _ := raw.(map[string]any)
		from, _ := e["from"].(string)
		to, _ := e["to"].(string)
		label, _ := e["port"].(string)
		if e["select"] != nil {
			label = joinLabel(label, "select")
		}
		d.Root.Edges = append(d.Root.Edges, Edge{From: from, To: to, Label: label, Kind: EdgeData})
	}
	d.Root.Edges = mergeEdges(d.Root.Edges)
	return d, nil
}

// Walk calls f for every node, depth first in declaration order.
func (d *Diagram) Walk(f func(n *Node, depth int)) { walk(&d.Root, 0, f) }

func walk(s *Scope, depth int, f func(*Node, int)) {
	for _, n := range s.Nodes {
		f(n, depth)
		if n.Inner != nil {
			walk(n.Inner, depth+1, f)
		}
	}
}
