package step

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/run"
)

// markerAfterTask is a DAG whose query q leaves the reference's empty
// marker in an object it builds (a date operator over a missing member),
// and whose node r reads q only once task t answered, a later input.
// The reference keeps q's value, marker included, for the whole DAG.
func markerAfterTask(r string) string {
	return `{"$workflow":"0.2","revision":"j-1","initial":"w","states":{"w":{"work":{"dag":{"$dag":"0.1","nodes":{
	"in":{"kind":"input"},
	"q":{"kind":"query","query":{"$map":[["zeta",1],["due",{"$date-add":["2026-01-01","$.delay"]}],["a~/b",[{"$date-add":["2026-01-01","$.delay"]},2]]]}},
	"t":{"kind":"task","run":"ok","version":"1"},"r":{"kind":"query","query":` + r + `},"out":{"kind":"output"}},
	"edges":[{"from":"in","to":"q"},{"from":"in","to":"t"},{"from":"q","to":"r","port":"q"},{"from":"t","to":"r","port":"t"},
	{"from":"r","to":"out"}]}},"then":"done"},"done":{"final":true}}}`
}

// TestMarkerCrossesInputsInTheRecord: between inputs a run lives in its
// record's bytes, and a node that reads a marked value after a task
// answered (and after a pause and a resume) reads what the reference
// reads. The answers are the reference's, from conformance/simulate.mjs
// over the same document: [true,3], and JF2008 at the output for the
// marker itself; without the marker in the record they were [false,2]
// and a run done with null in place of it.
func TestMarkerCrossesInputsInTheRecord(t *testing.T) {
	t.Parallel()
	o := startRun(t, markerAfterTask(`{"$seq":[{"$exists":"$.q.due"},{"$count":"$.q.*"}]}`), `{"n":1}`)
	if !strings.Contains(string(o.cur.Record.State), `"marked":{"q":`) {
		t.Fatalf("the record keeps no marked value of q:\n%s", o.cur.Record.State)
	}
	o.step(o.s.Names.Pause("j-1"), []byte(`{"reason":"upstream down"}`))
	o.step(o.s.Names.Result("j-1"), o.result("t", `6`))
	o.step(o.s.Names.Resume("j-1"), nil)
	st := o.state()
	if got, _ := json.Marshal(st.Context.Data); st.Status != run.StatusDone || string(got) != `[true,3]` {
		t.Errorf("status %s, data %s; want done with [true,3]", st.Status, got)
	}
	if strings.Contains(string(o.cur.Record.State), `"marked"`) {
		t.Errorf("a finished activation keeps marked values:\n%s", o.cur.Record.State)
	}

	o = startRun(t, markerAfterTask(`"$.q"`), `{"n":1}`)
	o.step(o.s.Names.Result("j-1"), o.result("t", `6`))
	st = o.state()
	if st.Status != run.StatusFailed || st.Error == nil || st.Error.Code != "JF2008" || st.Error.Path != "/nodes/out" {
		t.Errorf("status %s, error %+v; want failed with JF2008 at /nodes/out", st.Status, st.Error)
	}
}

// TestNonFiniteValueCrossesInputsInTheRecord: a query may answer NaN or
// an infinity, which the reference keeps in memory and the record keeps
// beside the value's JSON. Before, such a state did not encode and its
// input failed for good. The answers are the reference's
// (conformance/cases/simulate/diff-not-json-across-steps.json).
func TestNonFiniteValueCrossesInputsInTheRecord(t *testing.T) {
	t.Parallel()
	doc := strings.NewReplacer(`{"$map":[["zeta",1],["due",{"$date-add":["2026-01-01","$.delay"]}],["a~/b",[{"$date-add":["2026-01-01","$.delay"]},2]]]}`,
		`{"$map":[["zeta",{"$div":[-1,0]}],["alpha",[{"$div":[0,0]},1]]]}`).Replace(markerAfterTask(
		`{"$seq":[{"$lt":["$.q.zeta",0]},{"$eq":["$.q.alpha[0]","$.q.alpha[0]"]},{"$string-join":[{"$for":{"e":{"$entries":"$.q"}},"$return":"$e.key"},","]}]}`))
	o := startRun(t, doc, `{"n":1}`)
	if !strings.Contains(string(o.cur.Record.State), `"notJSON":{"values":{"q":{"nan":["/alpha/0"],"-inf":["/zeta"]}},"ordered":{"q":{"nan":["/alpha/0"],"-inf":["/zeta"]}}}`) {
		t.Fatalf("the record does not note q's NaN and -Infinity:\n%s", o.cur.Record.State)
	}
	o.step(o.s.Names.Result("j-1"), o.result("t", `6`))
	st := o.state()
	if got, _ := json.Marshal(st.Context.Data); st.Status != run.StatusDone || string(got) != `[true,false,"zeta,alpha"]` {
		t.Errorf("status %s, data %s; want done with [true,false,\"zeta,alpha\"]", st.Status, got)
	}
}
