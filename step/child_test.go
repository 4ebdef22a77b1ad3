package step

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/wire"
)

const (
	// childParent invokes sub@1, bound to the workflow "kid".
	childParent = `{"$workflow":"0.2","revision":"p/1","initial":"a","states":{
		"a":{"work":{"task":"sub","version":"1"},"then":"done"},"done":{"final":true}}}`
	// childKid waits for an event and ends with its input as its result.
	childKid = `{"$workflow":"0.2","revision":"k/1","initial":"w","states":{
		"w":{"on":[{"event":"go","to":"done"}]},"done":{"final":true}}}`
)

// childSetup is the settings and definitions of a parent whose sub@1 is
// bound to kid (cascade as given).
func childSetup(t *testing.T, cascade bool) (Settings, Definitions) {
	t.Helper()
	p, err := workflow.CompileJSON([]byte(childParent), workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := workflow.CompileJSON([]byte(childKid), workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defs := DefinitionsFunc(func(name, _ string) (*Definition, error) {
		switch name {
		case "p":
			return &Definition{
				Name: "p", Revision: "p/1", Program: Engine{Workflow: p},
				Children: map[string]ChildBinding{"sub@1": {Workflow: "kid", Cascade: cascade}},
			}, nil
		case "kid":
			return &Definition{Name: "kid", Revision: "k/1", Program: Engine{Workflow: k}}, nil
		}
		return nil, errors.New("not deployed")
	})
	return Settings{Tokens: testSigner}.WithDefaults(), defs
}

// stepOK steps and fails the test unless the input applied.
func stepOK(t *testing.T, s Settings, cur Run, subject, data string, seq uint64, defs Definitions) Run {
	t.Helper()
	in, err := Parse(s, subject, nil, []byte(data))
	if err != nil {
		t.Fatalf("parse %s: %v", subject, err)
	}
	res, err := Step(s, cur, in, seq, float64(1000+seq), defs)
	if err != nil || res.Outcome != Applied {
		t.Fatalf("step %s: %s %v %v", subject, res.Outcome, res.Reason, err)
	}
	return res.Run
}

// outgoing finds the outbox message on subject.
func outgoing(t *testing.T, rec *runrecord.Record, subject string) runrecord.Outgoing {
	t.Helper()
	for _, o := range rec.Outbox {
		if o.Subject == subject {
			return o
		}
	}
	t.Fatalf("no message on %s in %+v", subject, rec.Outbox)
	return runrecord.Outgoing{}
}

// TestChildRun: a bound task starts a child instead of invoking a
// worker, the parent links it and it links back, its settling reports to
// the parent as the attempt's result, which the parent accepts.
func TestChildRun(t *testing.T) {
	t.Parallel()
	s, defs := childSetup(t, true)
	n := s.Names
	parent := stepOK(t, s, Run{}, n.Start("p1"), `{"workflow":"p","input":7}`, 1, defs)
	if len(parent.Record.Children) != 1 {
		t.Fatalf("children %+v, want one", parent.Record.Children)
	}
	c := parent.Record.Children[0]
	if c.Run != ChildID("p1", c.Activation, c.Node, c.Attempt) || c.Workflow != "kid" || c.Task != "sub" || c.Attempt != 1 {
		t.Errorf("child link %+v", c)
	}
	for _, o := range parent.Record.Outbox {
		if o.Kind == runrecord.OutInvoke {
			t.Errorf("a bound task was invoked: %+v", o)
		}
	}
	start := outgoing(t, parent.Record, n.Start(c.Run))
	var body wire.Start
	if err := json.Unmarshal(start.Data, &body); err != nil || body.Workflow != "kid" || string(body.Input) != "7" || body.Parent == nil || body.Parent.Run != "p1" {
		t.Fatalf("child start %s: %v", start.Data, err)
	}

	kid := stepOK(t, s, Run{}, start.Subject, string(start.Data), 2, defs)
	if kid.Record.Parent == nil || kid.Record.Parent.Node != c.Node {
		t.Fatalf("child record's parent %+v", kid.Record.Parent)
	}
	kid = stepOK(t, s, kid, n.Event(c.Run, "go"), `{"ok":1}`, 3, defs)
	report := outgoing(t, kid.Record, n.Result("p1"))
	if report.Header[wire.HeaderChild] != c.Run {
		t.Errorf("report header %v", report.Header)
	}
	parent = stepOK(t, s, parent, report.Subject, string(report.Data), 4, defs)
	if parent.State.Status != run.StatusDone {
		t.Fatalf("parent %s after its child's result", parent.State.Status)
	}
	if ws := parent.Record.Status; ws == nil || string(ws.Result) != "7" || string(kid.Record.Status.Result) != "7" {
		t.Errorf("parent status %+v, want the child's result 7", ws)
	}
}

// TestChildCascadeStep: the parent's pause, resume and cancel send the
// same to its child in flight; a detached child gets none of them.
func TestChildCascadeStep(t *testing.T) {
	t.Parallel()
	for _, cascade := range []bool{true, false} {
		s, defs := childSetup(t, cascade)
		n := s.Names
		parent := stepOK(t, s, Run{}, n.Start("p1"), `{"workflow":"p","input":7}`, 1, defs)
		kid := parent.Record.Children[0].Run
		for i, op := range []struct{ subject, body, want string }{
			{n.Pause("p1"), `{"reason":"x"}`, n.Pause(kid)},
			{n.Resume("p1"), `{}`, n.Resume(kid)},
			{n.Cancel("p1"), `{"reason":"y"}`, n.Cancel(kid)},
		} {
			parent = stepOK(t, s, parent, op.subject, op.body, uint64(2+i), defs)
			var sent []string
			for _, o := range parent.Record.Outbox {
				if o.Kind == runrecord.OutInput {
					sent = append(sent, o.Subject)
				}
			}
			if cascade && (len(sent) != 1 || sent[0] != op.want) {
				t.Errorf("cascade: %s sent %v, want %s", op.subject, sent, op.want)
			}
			if !cascade && len(sent) != 0 {
				t.Errorf("detached: %s sent %v, want nothing", op.subject, sent)
			}
		}
	}
}

// TestChildStartForgedParent: a start whose parent link does not carry
// its attempt's token is refused.
func TestChildStartForgedParent(t *testing.T) {
	t.Parallel()
	s, defs := childSetup(t, true)
	in, err := Parse(s, s.Names.Start("k"), nil, []byte(`{"workflow":"kid","parent":{"run":"victim","activation":"a","node":"task","task":"sub","version":"1","attempt":1,"token":"forged"}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Step(s, Run{}, in, 1, 1000, defs)
	if err != nil || res.Outcome != Rejected || !strings.Contains(res.Reason.Error(), ReasonForgedToken) {
		t.Errorf("forged parent: %s %v %v", res.Outcome, res.Reason, err)
	}
}

func TestChildID(t *testing.T) {
	t.Parallel()
	a := ChildID("p", "act", "task", 1)
	if a != ChildID("p", "act", "task", 1) || !strings.HasPrefix(a, "p--task-1-") {
		t.Errorf("ChildID %q is not stable and readable", a)
	}
	if a == ChildID("p", "act", "task", 2) || a == ChildID("p", "act2", "task", 1) {
		t.Error("another attempt or activation gets the same child id")
	}
	long := ChildID(strings.Repeat("x", 120), "act", "task", 1)
	if !strings.HasPrefix(long, "child-") || len(long) > 128 {
		t.Errorf("ChildID of a long parent %q", long)
	}
	if odd := ChildID("p", "act", "a/b", 1); !strings.HasPrefix(odd, "child-") {
		t.Errorf("ChildID of a node that is no token %q", odd)
	}
}

// TestChildInputIsWith: a DAG node bound to a workflow starts its child
// with what the node's `with` resolved to, the arguments a worker's
// handler gets for the same node unbound; a node with no `with` passes
// its input, as a worker gets it.
func TestChildInputIsWith(t *testing.T) {
	t.Parallel()
	doc := `{"$workflow":"0.2","revision":"d/1","initial":"a","states":{
		"a":{"work":{"dag":{"$dag":"0.1","nodes":{"in":{"kind":"input"},
			"w":{"kind":"task","run":"sub","version":"1","with":{"n":"$.order.qty","who":"$.customer"}},
			"p":{"kind":"task","run":"sub","version":"2"},
			"join":{"kind":"query","query":{"w":"$.w","p":"$.p"}},"out":{"kind":"output"}},
		"edges":[{"from":"in","to":"w"},{"from":"in","to":"p"},{"from":"w","to":"join","port":"w"},
			{"from":"p","to":"join","port":"p"},{"from":"join","to":"out"}]}},"then":"done"},
		"done":{"final":true}}}`
	wf, err := workflow.CompileJSON([]byte(doc), workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defs := func(bound map[string]ChildBinding) Definitions {
		return DefinitionsFunc(func(name, _ string) (*Definition, error) {
			return &Definition{Name: "d", Revision: "d/1", Program: Engine{Workflow: wf}, Children: bound}, nil
		})
	}
	s := Settings{Tokens: testSigner}.WithDefaults()
	start := `{"workflow":"d","input":{"order":{"qty":3},"customer":"ada"}}`

	// What workers get, unbound: the with of node w, the input of node p.
	worker := stepOK(t, s, Run{}, s.Names.Start("r"), start, 1, defs(nil))
	got := map[string]wire.Invocation{}
	for _, o := range worker.Record.Outbox {
		if o.Kind == runrecord.OutInvoke {
			var inv wire.Invocation
			if err := json.Unmarshal(o.Data, &inv); err != nil {
				t.Fatal(err)
			}
			got[inv.Node] = inv
		}
	}
	if len(got) != 2 || got["w"].With == nil || got["p"].With != nil {
		t.Fatalf("invocations %+v, want w with a with and p without", got)
	}

	bound := map[string]ChildBinding{"sub@1": {Workflow: "kid", Cascade: true}, "sub@2": {Workflow: "kid", Cascade: true}}
	parent := stepOK(t, s, Run{}, s.Names.Start("r"), start, 1, defs(bound))
	for _, c := range parent.Record.Children {
		var body wire.Start
		if err := json.Unmarshal(outgoing(t, parent.Record, s.Names.Start(c.Run)).Data, &body); err != nil {
			t.Fatal(err)
		}
		want := got[c.Node].With
		if c.Node == "p" {
			want = got[c.Node].Input
		}
		if string(body.Input) != string(want) {
			t.Errorf("child of node %s starts with input %s, want %s (what a worker gets)", c.Node, body.Input, want)
		}
	}
	if len(parent.Record.Children) != 2 {
		t.Fatalf("children %+v, want two", parent.Record.Children)
	}
}
