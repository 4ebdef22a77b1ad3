package step

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/wire"
)

// queueSetup: workflow q invokes t@1 then u@1, the policy queueing t by
// priority (from the input's tier) and key (the input's customer) and
// leaving u alone; workflow p binds sub@1 to the child workflow kid.
func queueSetup(t *testing.T) (Settings, Definitions) {
	t.Helper()
	q, err := workflow.CompileJSON([]byte(`{"$workflow":"0.2","revision":"q/1","initial":"a","states":{
		"a":{"work":{"task":"t","version":"1"},"then":"b"},
		"b":{"work":{"task":"u","version":"1"},"then":"done"},"done":{"final":true}}}`), workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte(`{"t@1":{"priority":1,"priorityFrom":"$.input.tier","key":"$.input.customer","maxPerKey":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, kids := childSetup(t, true)
	defs := DefinitionsFunc(func(name, rev string) (*Definition, error) {
		if name == "q" {
			return &Definition{Name: "q", Revision: "q/1", Program: Engine{Workflow: q}, Queue: func(task, version string, input any, started *int) (int, string, int, bool) {
				rule, ok := pol.Queue(task, version)
				if !ok {
					return 0, "", 0, false
				}
				priority, key := rule.Of(input, started)
				return priority, key, rule.MaxPerKey, true
			}}, nil
		}
		if name == "p" || name == "kid" {
			return kids.Definition(name, rev)
		}
		return nil, errors.New("not deployed")
	})
	return Settings{Tokens: testSigner}.WithDefaults(), defs
}

// TestQueuedInvocations: an invocation of a queued task version goes to
// the queue subject of its priority and key, with its key and limit as
// headers; the start's priority wins over the policy's and the run keeps
// it for every later step; an invocation of a task version the policy
// does not queue goes to its task subject; a child run inherits its
// parent's priority.
func TestQueuedInvocations(t *testing.T) {
	t.Parallel()
	s, defs := queueSetup(t)
	n := s.Names
	cases := []struct {
		name, start string
		priority    int
		started     *int
	}{
		{"from the input", `{"workflow":"q","input":{"tier":4,"customer":"ada"}}`, 4, nil},
		{"from the start", `{"workflow":"q","input":{"tier":4,"customer":"ada"},"priority":8}`, 8, new(8)},
		{"the policy's", `{"workflow":"q","input":{"customer":"ada"}}`, 1, nil},
	}
	for i, c := range cases {
		runID := "r" + string(rune('1'+i))
		r := stepOK(t, s, Run{}, n.Start(runID), c.start, 1, defs)
		inv := r.Record.Outbox[0]
		if want := n.Queue("t", "1", c.priority, KeyToken("ada")); inv.Kind != runrecord.OutInvoke || inv.Subject != want {
			t.Fatalf("%s: invocation on %s, want %s", c.name, inv.Subject, want)
		}
		if inv.Header[wire.HeaderKey] != "ada" || inv.Header[wire.HeaderKeyLimit] != "2" || inv.Header[wire.HeaderRunID] != runID {
			t.Fatalf("%s: headers %v", c.name, inv.Header)
		}
		if (r.Record.Priority == nil) != (c.started == nil) || c.started != nil && *r.Record.Priority != *c.started {
			t.Fatalf("%s: the record keeps priority %v, want %v", c.name, r.Record.Priority, c.started)
		}
		var body wire.Invocation
		if err := json.Unmarshal(inv.Data, &body); err != nil {
			t.Fatal(err)
		}
		res, _ := json.Marshal(wire.Result{Activation: body.Activation, Node: body.Node, Attempt: body.Attempt, Token: body.Token, Output: json.RawMessage(`1`)})
		r = stepOK(t, s, r, n.Result(runID), string(res), 2, defs)
		if got := outgoing(t, r.Record, n.Task("u", "1")); got.Kind != runrecord.OutInvoke {
			t.Fatalf("%s: u@1 is not queued, yet %+v", c.name, got)
		}
		if (r.Record.Priority == nil) != (c.started == nil) {
			t.Fatalf("%s: the next step lost the run's priority", c.name)
		}
	}
	parent := stepOK(t, s, Run{}, n.Start("p1"), `{"workflow":"p","input":7,"priority":6}`, 1, defs)
	var child wire.Start
	if err := json.Unmarshal(outgoing(t, parent.Record, n.Start(parent.Record.Children[0].Run)).Data, &child); err != nil {
		t.Fatal(err)
	}
	if child.Priority == nil || *child.Priority != 6 {
		t.Fatalf("the child's start has priority %v, want its parent's 6", child.Priority)
	}
}
