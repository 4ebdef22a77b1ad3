package step

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/wire"
)

// TestExpireRemovesOnlyTheSettlementItWasScheduledFor: a removal input is
// refused on a waiting run and for another settlement, noted like any
// rejection, and stands only on the settled run it names.
func TestExpireRemovesOnlyTheSettlementItWasScheduledFor(t *testing.T) {
	t.Parallel()
	wf, err := workflow.CompileJSON([]byte(waitTwice), workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := Settings{Tokens: testSigner}.WithDefaults()
	defs := DefinitionsFunc(func(string, string) (*Definition, error) {
		return &Definition{Name: "w", Revision: "w/1", Program: Engine{Workflow: wf}}, nil
	})
	names := s.Names
	removal := nats.Header{wire.HeaderExpire: []string{"1"}}
	step := func(cur Run, seq uint64, subject, data string) Result {
		t.Helper()
		var h nats.Header
		if subject == names.Timer("r") {
			h = removal
		}
		in, err := Parse(s, subject, h, []byte(data))
		if in == nil {
			t.Fatalf("parse %s %s: %v", subject, data, err)
		}
		res, err := Step(s, cur, in, seq, float64(1000*seq), defs)
		if err != nil {
			t.Fatalf("step %d: %v", seq, err)
		}
		return res
	}
	expire := func(settled float64) string {
		return fmt.Sprintf(`{"settled":%v,"status":"done","retention":60000}`, settled)
	}
	if res := step(Run{}, 1, names.Timer("r"), expire(1)); res.Outcome != NoRun {
		t.Fatalf("removal of a run without a record: %s", res.Outcome)
	}
	cur := step(Run{}, 1, names.Start("r"), `{"workflow":"w"}`).Run
	res := step(cur, 2, names.Timer("r"), expire(1000))
	if res.Outcome != Rejected || !errors.Is(res.Reason, run.ErrRejected) || !strings.Contains(res.Reason.Error(), "is waiting: retention removes only settled runs") {
		t.Fatalf("removal of a waiting run: %s %v", res.Outcome, res.Reason)
	}
	if !res.Run.Record.HasApplied(2) || res.Run.Record.Order[0].To != 2 || res.Removed != nil {
		t.Errorf("the refusal is not noted on the record: %+v", res.Run.Record)
	}
	cur = step(res.Run, 3, names.Event("r", "x"), `1`).Run
	cur = step(cur, 4, names.Event("r", "x"), `2`).Run
	if cur.State.Status != run.StatusDone {
		t.Fatalf("status %s", cur.State.Status)
	}
	settled := cur.Record.Status.Time
	if res := step(cur, 5, names.Timer("r"), expire(settled-1)); res.Outcome != Rejected || !strings.Contains(res.Reason.Error(), "settled again") {
		t.Errorf("removal scheduled for another settlement: %s %v", res.Outcome, res.Reason)
	}
	if res := step(cur, 6, names.Timer("r"), `{"settled":0}`); res.Outcome != Rejected || !errors.Is(res.Reason, ErrMalformed) {
		t.Errorf("malformed removal: %s %v", res.Outcome, res.Reason)
	}
	res = step(cur, 7, names.Timer("r"), expire(settled))
	if res.Outcome != Remove || res.Removed == nil {
		t.Fatalf("removal of the settled run: %s %v", res.Outcome, res.Reason)
	}
	r := *res.Removed
	if r.Run != "r" || r.At != 7000 || r.Status != "done" || r.Settled != settled || r.Workflow != "w" || r.Revision != "w/1" || r.Until != 7000+60000 {
		t.Errorf("tombstone %+v", r)
	}
	if res.Run.Record != cur.Record {
		t.Error("a removal changed the record it replaces")
	}
	// The tombstone outlives a short retention by MinTombstone.
	if res := step(cur, 8, names.Timer("r"), fmt.Sprintf(`{"settled":%v,"status":"done","retention":10}`, settled)); res.Removed.Until != 8000+float64(MinTombstone.Milliseconds()) {
		t.Errorf("tombstone of a 10ms retention lives until %v", res.Removed.Until)
	}
}
