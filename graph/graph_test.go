package graph

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/statechart"
	"github.com/jetflow/jetflow/engine/workflow"
)

func orderWorkflow(t testing.TB) *workflow.Workflow {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "examples", "order.json"))
	if err != nil {
		t.Fatal(err)
	}
	wf, err := workflow.CompileJSON(data, workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

func compile(t testing.TB, doc string) *workflow.Workflow {
	t.Helper()
	wf, err := workflow.CompileJSON([]byte(doc), workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

func find(s *Scope, id string) *Node {
	for _, n := range s.Nodes {
		if n.ID == id {
			return n
		}
		if n.Inner != nil {
			if f := find(n.Inner, id); f != nil {
				return f
			}
		}
	}
	return nil
}

func edge(s *Scope, from, to string) *Edge {
	for i := range s.Edges {
		if s.Edges[i].From == from && s.Edges[i].To == to {
			return &s.Edges[i]
		}
	}
	return nil
}

func TestStatechart(t *testing.T) {
	t.Parallel()
	d := Statechart(orderWorkflow(t), nil)
	if len(d.Root.Nodes) != 8 || d.Root.Nodes[0].Shape != ShapeStart {
		t.Fatalf("root nodes: %d, first %+v", len(d.Root.Nodes), d.Root.Nodes[0])
	}
	fulfil := find(&d.Root, "/states/fulfil")
	if fulfil == nil || fulfil.Inner == nil || len(fulfil.Inner.Nodes) != 4 {
		t.Fatalf("fulfil: %+v", fulfil)
	}
	cases := []struct {
		scope    *Scope
		from, to string
		kind     EdgeKind
		label    string
	}{
		{&d.Root, "#start", "/states/check", EdgeInitial, ""},
		{&d.Root, "/states/check", "/states/decide", EdgeThen, ""},
		{&d.Root, "/states/check", "/states/rejected", EdgeCatch, "catch"},
		{&d.Root, "/states/decide", "/states/rejected", EdgeChoice, `{"$not":"$.context.data.inStock"} | {"$gt":["$.context.data.risk",0.8]}`},
		{&d.Root, "/states/decide", "/states/await-payment", EdgeOtherwise, "otherwise"},
		{&d.Root, "/states/await-payment", "/states/fulfil", EdgeEvent, `payment [{"$ge":["$.payload.amount","$.context.data.total"]}]`},
		{&d.Root, "/states/await-payment", "/states/expired", EdgeAfter, "after 1m"},
		{&d.Root, "/states/fulfil", "/states/done", EdgeThen, ""},
		{fulfil.Inner, "/states/fulfil#start", "/states/fulfil/flow/states/ship", EdgeInitial, ""},
		{fulfil.Inner, "/states/fulfil/flow/states/ship", "/states/fulfil/flow/states/notify", EdgeThen, ""},
	}
	for _, c := range cases {
		e := edge(c.scope, c.from, c.to)
		if e == nil || e.Kind != c.kind || e.Label != c.label {
			t.Errorf("edge %s -> %s = %+v, want kind %s label %q", c.from, c.to, e, c.kind, c.label)
		}
	}
	if n := len(d.Root.Edges); n != 8 {
		t.Errorf("root has %d edges, want 8 (parallel choices merged)", n)
	}
}

func TestMarks(t *testing.T) {
	t.Parallel()
	wf := orderWorkflow(t)
	st := &run.State{
		Status: run.StatusRunning, Control: statechart.State{Active: []string{"/states/fulfil/flow/states/ship"}},
		Context: run.Context{Visits: map[string]any{"/states/check": 1.0, "/states/fulfil": 1.0, "/states/fulfil/flow/states/ship": 2.0}},
	}
	d := Statechart(wf, RunMarks(st))
	want := map[string]struct {
		s Status
		v int64
	}{
		"/states/fulfil/flow/states/ship": {StatusActive, 2},
		"/states/fulfil":                  {StatusActive, 1}, // encloses the active leaf
		"/states/check":                   {StatusVisited, 1},
		"/states/decide":                  {StatusNone, 0},
	}
	for id, w := range want {
		if n := find(&d.Root, id); n.Status != w.s || n.Visits != w.v {
			t.Errorf("%s: %s ×%d, want %s ×%d", id, n.Status, n.Visits, w.s, w.v)
		}
	}
	st.Status = run.StatusFailed
	d = Statechart(wf, RunMarks(st))
	if n := find(&d.Root, "/states/fulfil/flow/states/ship"); n.Status != StatusFailed {
		t.Errorf("failed run: ship is %s", n.Status)
	}
}

func TestRunDAGMarks(t *testing.T) {
	t.Parallel()
	wf := orderWorkflow(t)
	check := "/states/check"
	inFlight := func() *run.State {
		return &run.State{
			Status: run.StatusRunning, Control: statechart.State{Active: []string{check}},
			Pending: &run.Pending{State: check, Visit: 1, Values: map[string]any{}},
			Work: &run.Work{
				Activation: "a", Values: map[string]any{"order": map[string]any{}, "stock": 1.0},
				Running: map[string]*run.Attempt{"price": {Attempt: 2}, "fraud": {Attempt: 1, Waiting: true}},
			},
			Context: run.Context{Results: map[string]any{}},
		}
	}
	failed := inFlight()
	failed.Status, failed.Work = run.StatusFailed, nil
	failed.Error = &run.Failure{Code: string(fault.JF2006), Path: "/nodes/price", Message: "node 'price' failed: boom"}
	failed.Kept = map[string]any{"stock": 1.0}
	cancelled := inFlight()
	cancelled.Status = run.StatusCancelled
	done := &run.State{
		Status: run.StatusWaiting, Control: statechart.State{Active: []string{"/states/await-payment"}},
		Context: run.Context{Results: map[string]any{check: map[string]any{"total": 9.0}}},
	}
	caught := &run.State{
		Status: run.StatusDone, Control: statechart.State{Active: []string{"/states/rejected"}},
		Context: run.Context{Results: map[string]any{check: map[string]any{"error": map[string]any{"code": "JF2006", "message": "x", "nodeId": "stock"}}}},
	}
	never := &run.State{Status: run.StatusRunning, Control: statechart.State{Active: []string{check}}, Context: run.Context{Results: map[string]any{}}}

	cases := []struct {
		name string
		st   *run.State
		want map[string]NodeMark
	}{
		{"in flight", inFlight(), map[string]NodeMark{
			"order": {Status: StatusDone}, "stock": {Status: StatusDone}, "price": {StatusInvoked, 2},
			"fraud": {StatusRetrying, 1}, "verdict": {Status: StatusWaiting}, "out": {Status: StatusWaiting},
		}},
		// Nothing waits in an activation the run ended in.
		{"failed", failed, map[string]NodeMark{"order": {Status: StatusDone}, "stock": {Status: StatusDone}, "price": {Status: StatusFailed}, "fraud": {}, "verdict": {}, "out": {}}},
		{"cancelled", cancelled, map[string]NodeMark{"order": {Status: StatusDone}, "stock": {}, "price": {}, "fraud": {}, "verdict": {}}},
		{"completed", done, map[string]NodeMark{"stock": {Status: StatusDone}, "out": {Status: StatusDone}}},
		{"caught", caught, map[string]NodeMark{"stock": {Status: StatusFailed}, "price": {}}},
		{"never", never, nil},
	}
	for _, c := range cases {
		got := RunDAGMarks(wf, c.st, check)
		if c.want == nil && got != nil {
			t.Errorf("%s: %v, want nil", c.name, got)
		}
		for id, w := range c.want {
			if got[id] != w {
				t.Errorf("%s: node %s is %+v, want %+v", c.name, id, got[id], w)
			}
		}
	}
	if RunDAGMarks(wf, inFlight(), "/states/decide") != nil {
		t.Error("marks for a state that is not a work state")
	}
}

func TestDAG(t *testing.T) {
	t.Parallel()
	wf := orderWorkflow(t)
	d, err := DAG(wf, "/states/check", map[string]NodeMark{"price": {StatusInvoked, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Root.Nodes) != 6 || len(d.Root.Edges) != 8 {
		t.Fatalf("%d nodes, %d edges", len(d.Root.Nodes), len(d.Root.Edges))
	}
	if n := find(&d.Root, "price"); n.Detail != "quote-price@1" || n.Status != StatusInvoked || n.Attempt != 2 || n.Shape != ShapeTask {
		t.Errorf("price: %+v", n)
	}
	if e := edge(&d.Root, "stock", "verdict"); e == nil || e.Label != "stock" {
		t.Errorf("ported edge: %+v", e)
	}
	if _, err := DAG(wf, "/states/decide", nil); err == nil || !strings.Contains(err.Error(), "not a work state") {
		t.Errorf("DAG of a choice: %v", err)
	}
}

func TestMillis(t *testing.T) {
	t.Parallel()
	for ms, want := range map[float64]string{250: "250ms", 1000: "1s", 60000: "1m", 90000: "1m30s", 7200000: "2h", 1500: "1500ms", 0.5: "0.5ms"} {
		if got := Millis(ms); got != want {
			t.Errorf("Millis(%v) = %q, want %q", ms, got, want)
		}
	}
}
