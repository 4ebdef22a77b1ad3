package step

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/workflow"
)

// Migrations join the parser's table (and so the fuzz target's seeds).
func init() {
	parseCases = append(parseCases, []parseCase{
		{
			name: "migrate", subject: "jetflow.in.r1.migrate", body: `{"from":"a","to":"b","proof":"ff","reason":"new step"}`,
			check: func(t *testing.T, in *Input) {
				if m := in.Migration(); m == nil || m.From != "a" || m.To != "b" || m.Proof != "ff" || in.msg.Reason != "new step" {
					t.Errorf("migration %+v", m)
				}
			},
		},
		{name: "migrate without to", subject: "jetflow.in.r1.migrate", body: `{"from":"a"}`, bad: "must both be revision names"},
		{name: "migrate empty", subject: "jetflow.in.r1.migrate", bad: "migrate body"},
	}...)
}

// migDocs are a revision waiting for "go" after a timer-guarded wait, and
// one that adds a state before it (renumbering the chart's transitions).
const (
	migFrom = `{"$workflow":"0.2","revision":"m/1","initial":"w","states":{
 "w":{"on":[{"event":"go","to":"done"}],"after":{"ms":60000,"to":"late"}},
 "late":{"final":true},"done":{"final":true}}}`
	migTo = `{"$workflow":"0.2","revision":"m/2","initial":"w","states":{
 "w":{"on":[{"event":"go","to":"more"}],"after":{"ms":60000,"to":"late"}},
 "more":{"on":[{"event":"again","to":"done"}]},
 "late":{"final":true},"done":{"final":true}}}`
)

// TestMigrateStep: a migration re-pins the run when its proof matches,
// keeps its state and armed timer (renumbered to the same transition of
// the new revision), publishes nothing, and the run then follows the new
// revision; a stale proof, a divergence, a run on another revision or
// already moved is refused and recorded.
func TestMigrateStep(t *testing.T) {
	t.Parallel()
	defs := map[string]*Definition{}
	for rev, doc := range map[string]string{"m/1": migFrom, "m/2": migTo} {
		wf, err := workflow.CompileJSON([]byte(doc), workflow.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defs[rev] = &Definition{Name: "m", Revision: rev, Program: Engine{Workflow: wf}}
	}
	s := Settings{Tokens: testSigner}.WithDefaults()
	w := &walk{t: t, s: s, defs: DefinitionsFunc(func(_, rev string) (*Definition, error) {
		if rev == "" {
			rev = "m/1"
		}
		return defs[rev], nil
	})}
	n := s.Names
	w.step(1, n.Start("r"), `{"workflow":"m"}`, 1000)
	before := w.cur.State
	proof, err := Proof(before, ChartOf(defs["m/1"]))
	if err != nil {
		t.Fatal(err)
	}
	body := func(m map[string]string) string {
		b, _ := json.Marshal(m)
		return string(b)
	}
	refused := func(seq uint64, m map[string]string, want string) {
		t.Helper()
		res := w.step(seq, n.Migrate("r"), body(m), 2000)
		if res.Outcome != Rejected || !strings.Contains(res.Reason.Error(), want) {
			t.Fatalf("migration %v: %s %v, want a refusal saying %q", m, res.Outcome, res.Reason, want)
		}
		if r := res.Run.Record.Rejected[len(res.Run.Record.Rejected)-1]; r.Seq != seq || r.Kind != "migrate" {
			t.Fatalf("refusal recorded as %+v", r)
		}
	}
	refused(2, map[string]string{"from": "m/1", "to": "m/2", "proof": "00"}, "took inputs since its history was checked")
	refused(3, map[string]string{"from": "m/1", "to": "m/2", "divergence": "diverges at input 1"}, "diverges at input 1")
	refused(4, map[string]string{"from": "m/0", "to": "m/2", "proof": proof}, "not on revision m/0")

	res := w.step(5, n.Migrate("r"), body(map[string]string{"from": "m/1", "to": "m/2", "proof": proof}), 3000)
	after := res.Run.State
	if res.Outcome != Applied || after.Revision != "m/2" || after.StartRevision != "m/1" || len(res.Run.Record.Outbox) != 0 {
		t.Fatalf("migration: %s %v, revision %s from %s, outbox %v", res.Outcome, res.Reason, after.Revision, after.StartRevision, res.Run.Record.Outbox)
	}
	if res.Run.Record.Status != nil && res.Run.Record.Status.Revision != "m/2" {
		t.Fatalf("the record's status names %s", res.Run.Record.Status.Revision)
	}
	oldT, newT := before.Control.Timers[0].Transition, after.Control.Timers[0].Transition
	if k1, k2 := ChartOf(defs["m/1"]).TransitionKey(oldT), ChartOf(defs["m/2"]).TransitionKey(newT); k1 == "" || k1 != k2 || oldT == newT {
		t.Fatalf("armed timer: transition %d (%s) became %d (%s); want the same transition under its new index", oldT, k1, newT, k2)
	}
	if p, _ := Proof(after, ChartOf(defs["m/2"])); p != proof {
		t.Fatalf("the moved state differs from the checked one apart from its pins")
	}
	refused(6, map[string]string{"from": "m/1", "to": "m/2", "proof": proof}, "on revision m/2 already")

	// The moved run follows its new revision: "go" leads to the added state.
	w.step(7, n.Event("r", "go"), ``, 4000)
	if got := w.cur.State.Control.Active; len(got) != 1 || got[0] != "/states/more" {
		t.Fatalf("after go the run is in %v, want the state m/2 added", got)
	}
}
