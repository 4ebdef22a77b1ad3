package step

import (
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
)

// TestStartWithEvent: a start carrying an event applies both in one step
// when it creates the run, the event alone when the run is live, and is
// refused when the run has ended or runs another workflow; a run that the
// start ends at once keeps the event as ignored.
func TestStartWithEvent(t *testing.T) {
	t.Parallel()
	s := Settings{Tokens: testSigner, RejectedHistory: 4}.WithDefaults()
	defs := DefinitionsFunc(func(name, _ string) (*Definition, error) {
		doc := waitTwice
		if name == "now" {
			doc = `{"$workflow":"0.2","revision":"n/1","initial":"done","states":{"done":{"final":true}}}`
		}
		wf, err := workflow.CompileJSON([]byte(doc), workflow.Options{})
		if err != nil {
			return nil, err
		}
		return &Definition{Name: name, Revision: name + "/1", Program: Engine{Workflow: wf}}, nil
	})
	step := func(cur Run, seq uint64, subject, body string) Result {
		t.Helper()
		in, err := Parse(s, subject, nil, []byte(body))
		if err != nil {
			t.Fatalf("parse %s: %v", body, err)
		}
		res, err := Step(s, cur, in, seq, float64(1000+seq), defs)
		if err != nil {
			t.Fatalf("step %s: %v", body, err)
		}
		return res
	}
	n := s.Names
	res := step(Run{}, 1, n.Start("r"), `{"workflow":"w","event":{"type":"x","payload":1}}`)
	if res.Outcome != Applied || res.Run.State.Status != run.StatusWaiting || res.Run.State.Control.Active[0] != "/states/b" {
		t.Fatalf("start with event: %v, %+v", res.Outcome, res.Run.State)
	}
	res = step(res.Run, 2, n.Start("r"), `{"workflow":"w","event":{"type":"x","payload":2}}`)
	if res.Outcome != Applied || res.Run.State.Status != run.StatusDone || res.Run.State.Context.Event.Payload != 2.0 {
		t.Fatalf("event alone to the live run: %v, %+v", res.Outcome, res.Run.State)
	}
	done := res.Run
	res = step(done, 3, n.Start("r"), `{"workflow":"w","event":{"type":"x"}}`)
	if res.Outcome != Rejected || !strings.Contains(res.Reason.Error(), `run "r" is done`) || len(res.Run.Record.Rejected) != 1 {
		t.Fatalf("start with event of an ended run: %v, %v", res.Outcome, res.Reason)
	}
	res = step(Run{}, 1, n.Start("q"), `{"workflow":"w"}`)
	res = step(res.Run, 2, n.Start("q"), `{"workflow":"now","event":{"type":"x"}}`)
	if res.Outcome != Rejected || !strings.Contains(res.Reason.Error(), "runs workflow w, not now") {
		t.Fatalf("start with event of another workflow: %v, %v", res.Outcome, res.Reason)
	}
	res = step(Run{}, 1, n.Start("e"), `{"workflow":"now","event":{"type":"x"}}`)
	if res.Outcome != Applied || res.Run.State.Status != run.StatusDone || len(res.Ignored) != 1 || !strings.Contains(res.Ignored[0].Reason, `run "e" is done`) {
		t.Fatalf("a start that ends the run at once: %v, %+v", res.Outcome, res.Ignored)
	}
	if _, err := Parse(s, n.Start("m"), nil, []byte(`{"workflow":"w","event":{"type":"a b"}}`)); err == nil {
		t.Error("a start with an event type that is not a subject token parsed")
	}
}
