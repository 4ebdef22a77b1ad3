package step

import (
	"encoding/json"
	"testing"

	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/wire"
)

// benchOneTask is the bench's one-task workflow: one task, then done.
const benchOneTask = `{"$workflow":"0.2","revision":"bench-1","initial":"work","states":{
 "work":{"work":{"task":"echo","version":"1"},"then":"done"},
 "done":{"final":true}}}`

// BenchmarkOneTaskRun is a one-task run's whole pure path as a
// dispatcher pays it: the start parsed, stepped and its record encoded,
// then the worker's result (echoing the invocation's input, made once)
// parsed,
// stepped and encoded. Its allocations per run are exact:
//
//	go test ./step -run '^$' -bench OneTaskRun -benchmem
func BenchmarkOneTaskRun(b *testing.B) {
	wf, err := workflow.CompileJSON([]byte(benchOneTask), workflow.Options{})
	if err != nil {
		b.Fatal(err)
	}
	s := Settings{Tokens: testSigner}.WithDefaults()
	def := &Definition{Name: "bench-one-task", Revision: "bench-1", Program: Engine{Workflow: wf}}
	defs := DefinitionsFunc(func(string, string) (*Definition, error) { return def, nil })
	startSubject, resultSubject := s.Names.Start("ot-0-1"), s.Names.Result("ot-0-1")
	startBody := []byte(`{"workflow":"bench-one-task","input":1}`)
	var resultBody []byte // the worker's result: the same for every run (deterministic token)
	run := func() {
		in, err := Parse(s, startSubject, nil, startBody)
		if err != nil {
			b.Fatal(err)
		}
		res, err := Step(s, Run{}, in, 1, 1_000_000, defs)
		if err != nil || res.Outcome != Applied {
			b.Fatalf("start: %s %v %v", res.Outcome, res.Reason, err)
		}
		if _, err := res.Run.Record.Encode(); err != nil {
			b.Fatal(err)
		}
		if resultBody == nil {
			inv := invocationOf(b, res.Run.Record)
			if resultBody, err = json.Marshal(wire.Result{Activation: inv.Activation, Node: inv.Node, Attempt: inv.Attempt, Token: inv.Token, Output: inv.Input}); err != nil {
				b.Fatal(err)
			}
		}
		in, err = Parse(s, resultSubject, nil, resultBody)
		if err != nil {
			b.Fatal(err)
		}
		res, err = Step(s, res.Run, in, 3, 1_000_002, defs)
		if err != nil || res.Outcome != Applied || res.Status == nil || res.Status.Status != "done" {
			b.Fatalf("result: %s %v %v", res.Outcome, res.Reason, err)
		}
		if _, err := res.Run.Record.Encode(); err != nil {
			b.Fatal(err)
		}
	}
	run()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		run()
	}
}

// invocationOf is the one invocation in a record's outbox.
func invocationOf(tb testing.TB, rec *runrecord.Record) wire.Invocation {
	tb.Helper()
	for _, o := range rec.Outbox {
		if o.Kind == runrecord.OutInvoke {
			var inv wire.Invocation
			if err := json.Unmarshal(o.Data, &inv); err != nil {
				tb.Fatal(err)
			}
			return inv
		}
	}
	tb.Fatalf("no invocation in the outbox")
	return wire.Invocation{}
}
