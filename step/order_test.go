package step

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/wire"
)

// joinAfterTask is a DAG whose join reads task t's result after task s,
// a later input, finished: the reference hands t's result to the join
// as its handler returned it.
const joinAfterTask = `{"$workflow":"0.2","revision":"j-1","initial":"w","states":{
 "w":{"work":{"dag":{"$dag":"0.1",
  "nodes":{"in":{"kind":"input"},"t":{"kind":"task","run":"make","version":"1"},"s":{"kind":"task","run":"slow","version":"1"},
   "j":{"kind":"query","query":{"$string-join":[{"$for":{"e":{"$entries":"$.t"}},"$return":"$e.key"},","]}},
   "out":{"kind":"output"}},
  "edges":[{"from":"in","to":"t"},{"from":"in","to":"s"},{"from":"t","to":"j","port":"t"},{"from":"s","to":"j","port":"s"},{"from":"j","to":"out"}]}},
  "then":"done"},
 "done":{"final":true}}}`

// TestResultMemberOrderAcrossSteps: a worker's result is read in the
// order its text writes its members (as JSON.parse reads it), kept in
// that order in the stored record while a node still reads it, and read
// back so from the bytes, which encode again to the same bytes.
func TestResultMemberOrderAcrossSteps(t *testing.T) {
	t.Parallel()
	wf, err := workflow.CompileJSON([]byte(joinAfterTask), workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := Settings{Tokens: testSigner}.WithDefaults()
	def := &Definition{Name: "join", Revision: "j-1", Program: Engine{Workflow: wf}}
	defs := DefinitionsFunc(func(string, string) (*Definition, error) { return def, nil })
	step := func(cur Run, subject string, body []byte, seq uint64) Run {
		t.Helper()
		in, err := Parse(s, subject, nil, body)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Step(s, cur, in, seq, float64(1000+seq), defs)
		if err != nil || res.Outcome != Applied {
			t.Fatalf("seq %d: %s %v %v", seq, res.Outcome, res.Reason, err)
		}
		// the next step reads the record from its bytes, as a dispatcher
		// does; read back and encoded again, they are the same bytes
		data, err := res.Run.Record.Encode()
		if err != nil {
			t.Fatal(err)
		}
		rec, err := runrecord.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		st, err := run.Decode(rec.State)
		if err != nil {
			t.Fatal(err)
		}
		again, err := run.Encode(st)
		if err != nil || !bytes.Equal(again, rec.State) {
			t.Fatalf("seq %d: the state read back encodes as\n%s\nnot\n%s (%v)", seq, again, rec.State, err)
		}
		return Run{Record: rec}
	}
	cur := step(Run{}, s.Names.Start("j-1"), []byte(`{"workflow":"join","input":{}}`), 1)
	invs := map[string]wire.Invocation{}
	for _, o := range cur.Record.Outbox {
		if o.Kind == runrecord.OutInvoke {
			var inv wire.Invocation
			if err := json.Unmarshal(o.Data, &inv); err != nil {
				t.Fatal(err)
			}
			invs[inv.Node] = inv
		}
	}
	if len(invs) != 2 {
		t.Fatalf("invocations %v, want t and s", invs)
	}
	result := func(node, output string) []byte {
		inv := invs[node]
		b, err := json.Marshal(wire.Result{Activation: inv.Activation, Node: inv.Node, Attempt: inv.Attempt, Token: inv.Token, Output: json.RawMessage(output)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cur = step(cur, s.Names.Result("j-1"), result("t", `{"zeta":1,"alpha":{"y":1,"x":2},"10":1,"9":2}`), 2)
	if !strings.Contains(string(cur.Record.State), `"ordered":{"t":{"9":2,"10":1,"zeta":1,"alpha":{"y":1,"x":2}}}`) {
		t.Errorf("the record keeps no ordered value of t:\n%s", cur.Record.State)
	}
	cur = step(cur, s.Names.Result("j-1"), result("s", `1`), 3)
	st, err := run.Decode(cur.Record.State)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != run.StatusDone || st.Context.Data != "9,10,zeta,alpha" {
		t.Errorf("status %s, data %v; want done with t's keys as its worker wrote them, 9,10,zeta,alpha", st.Status, st.Context.Data)
	}
	if strings.Contains(string(cur.Record.State), `"ordered"`) {
		t.Errorf("a finished activation keeps ordered values:\n%s", cur.Record.State)
	}
}
