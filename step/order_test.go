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
	o := newOrderRun(t)
	o.step(o.s.Names.Result("j-1"), o.result("t", `{"zeta":1,"alpha":{"y":1,"x":2},"10":1,"9":2}`))
	if !strings.Contains(string(o.cur.Record.State), `"ordered":{"t":{"9":2,"10":1,"zeta":1,"alpha":{"y":1,"x":2}}}`) {
		t.Errorf("the record keeps no ordered value of t:\n%s", o.cur.Record.State)
	}
	o.step(o.s.Names.Result("j-1"), o.result("s", `1`))
	o.wantJoined()
}

// TestHeldResultKeepsMemberOrder: a result that arrives while its run is
// paused is held in the record as its worker wrote it, so that after the
// resume the join reads it as it would have without the pause.
func TestHeldResultKeepsMemberOrder(t *testing.T) {
	t.Parallel()
	o := newOrderRun(t)
	o.step(o.s.Names.Pause("j-1"), []byte(`{"reason":"upstream down"}`))
	o.step(o.s.Names.Result("j-1"), o.result("t", `{"zeta":1,"alpha":{"y":1,"x":2},"10":1,"9":2}`))
	o.step(o.s.Names.Result("j-1"), o.result("s", `1`))
	o.step(o.s.Names.Resume("j-1"), nil)
	o.wantJoined()
}

// TestKeptResultKeepsMemberOrder: a failed run keeps its succeeded task
// results for a redrive as their workers wrote them, so that the join
// after the redrive reads them as it would have without the failure.
func TestKeptResultKeepsMemberOrder(t *testing.T) {
	t.Parallel()
	o := newOrderRun(t)
	o.step(o.s.Names.Result("j-1"), o.result("t", `{"zeta":1,"alpha":{"y":1,"x":2},"10":1,"9":2}`))
	o.step(o.s.Names.Result("j-1"), o.failure("s"))
	if st := o.state(); st.Status != run.StatusFailed {
		t.Fatalf("status %s after s failed for good, want failed", st.Status)
	}
	o.step(o.s.Names.Redrive("j-1"), []byte(`{"reason":"worker fixed"}`))
	o.step(o.s.Names.Result("j-1"), o.result("s", `1`))
	o.wantJoined()
}

// orderRun is a run of joinAfterTask stepped input by input, each step
// reading the record from its bytes as a dispatcher does.
type orderRun struct {
	t    *testing.T
	s    Settings
	defs DefinitionsFunc
	cur  Run
	seq  uint64
	invs map[string]wire.Invocation
}

// newOrderRun starts the run; its two task invocations are in flight.
func newOrderRun(t *testing.T) *orderRun {
	t.Helper()
	o := startRun(t, joinAfterTask, `{}`)
	if len(o.invs) != 2 {
		t.Fatalf("invocations %v, want t and s", o.invs)
	}
	return o
}

// startRun starts run j-1 of the workflow doc with input, stepped input
// by input from its record's bytes.
func startRun(t *testing.T, doc, input string) *orderRun {
	t.Helper()
	wf, err := workflow.CompileJSON([]byte(doc), workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	def := &Definition{Name: "join", Revision: "j-1", Program: Engine{Workflow: wf}}
	o := &orderRun{
		t: t, s: Settings{Tokens: testSigner}.WithDefaults(),
		defs: DefinitionsFunc(func(string, string) (*Definition, error) { return def, nil }),
	}
	o.step(o.s.Names.Start("j-1"), []byte(`{"workflow":"join","input":`+input+`}`))
	return o
}

// step applies one input, checks that the stored state read back
// encodes to the same bytes, and notes the invocations it published.
func (o *orderRun) step(subject string, body []byte) {
	t := o.t
	t.Helper()
	o.seq++
	in, err := Parse(o.s, subject, nil, body)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Step(o.s, o.cur, in, o.seq, float64(1000+o.seq), o.defs)
	if err != nil || res.Outcome != Applied {
		t.Fatalf("seq %d (%s): %s %v %v", o.seq, subject, res.Outcome, res.Reason, err)
	}
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
		t.Fatalf("seq %d: the state read back encodes as\n%s\nnot\n%s (%v)", o.seq, again, rec.State, err)
	}
	o.cur = Run{Record: rec}
	if o.invs == nil {
		o.invs = map[string]wire.Invocation{}
	}
	for _, out := range rec.Outbox {
		if out.Kind == runrecord.OutInvoke {
			var inv wire.Invocation
			if err := json.Unmarshal(out.Data, &inv); err != nil {
				t.Fatal(err)
			}
			o.invs[inv.Node] = inv
		}
	}
}

// result is a worker's result of node's latest invocation.
func (o *orderRun) result(node, output string) []byte {
	return o.answer(node, wire.Result{Output: json.RawMessage(output)})
}

// failure is node's latest invocation failing for good.
func (o *orderRun) failure(node string) []byte {
	return o.answer(node, wire.Result{Error: &wire.TaskError{Message: "bug", NonRetryable: true}})
}

func (o *orderRun) answer(node string, r wire.Result) []byte {
	inv := o.invs[node]
	r.Activation, r.Node, r.Attempt, r.Token = inv.Activation, inv.Node, inv.Attempt, inv.Token
	b, err := json.Marshal(r)
	if err != nil {
		o.t.Fatal(err)
	}
	return b
}

func (o *orderRun) state() *run.State {
	st, err := run.Decode(o.cur.Record.State)
	if err != nil {
		o.t.Fatal(err)
	}
	return st
}

// wantJoined checks the run is done with t's keys in the order its
// worker wrote them, and keeps no ordered values.
func (o *orderRun) wantJoined() {
	t := o.t
	t.Helper()
	if st := o.state(); st.Status != run.StatusDone || st.Context.Data != "9,10,zeta,alpha" {
		t.Errorf("status %s, data %v; want done with t's keys as its worker wrote them, 9,10,zeta,alpha", st.Status, st.Context.Data)
	}
	if strings.Contains(string(o.cur.Record.State), `"ordered"`) {
		t.Errorf("a finished activation keeps ordered values:\n%s", o.cur.Record.State)
	}
}
