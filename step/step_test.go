package step

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/runrecord"
)

// waitTwice waits for two events "x" and ends with the second's payload.
const waitTwice = `{
  "$workflow": "0.2",
  "revision": "w/1",
  "initial": "a",
  "states": {
    "a": {"on": [{"event": "x", "to": "b"}]},
    "b": {"on": [{"event": "x", "to": "done"}]},
    "done": {"final": true}
  }
}`

// panics is a reducer that panics on every input.
type panics struct{}

func (panics) Apply(*run.State, run.Message) (*run.State, []run.Effect, error) { panic("boom") }

// TestStepOutcomes drives Step through every outcome on the real engine.
func TestStepOutcomes(t *testing.T) {
	t.Parallel()
	wf, err := workflow.CompileJSON([]byte(waitTwice), workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := Settings{Tokens: testSigner, RejectedHistory: 2}.WithDefaults()
	var asked []string
	defs := DefinitionsFunc(func(name, revision string) (*Definition, error) {
		asked = append(asked, name+"@"+revision)
		switch name {
		case "w":
			return &Definition{Name: "w", Revision: "w/1", Program: Engine{Workflow: wf}}, nil
		case "boom":
			return &Definition{Name: "boom", Revision: "b/1", Program: panics{}}, nil
		}
		return nil, errors.New("not deployed")
	})
	names := s.Names
	parse := func(subject, data string) *Input {
		t.Helper()
		in, err := Parse(s, subject, nil, []byte(data))
		if in == nil {
			t.Fatalf("parse %s: %v", subject, err)
		}
		return in
	}
	steps := []struct {
		seq     uint64
		in      *Input
		outcome Outcome
	}{
		{1, parse(names.Event("r", "x"), `1`), NoRun},
		{2, parse(names.Start("r"), `{"workflow":"w"}`), Applied},
		{3, parse(names.Start("r"), `{"workflow":"w"}`), Rejected},
		{4, parse(names.Event("r", "x"), `"a"`), Applied},
		// Malformed, but addressed to a run that exists: refused on it.
		{5, parse(names.Result("r"), `[]`), Rejected},
		{4, parse(names.Event("r", "x"), `"a"`), Duplicate},
		{6, parse(names.Event("r", "x"), `"b"`), Applied},
		{7, parse(names.Cancel("r"), `{}`), Rejected},
	}
	var cur Run
	for i, st := range steps {
		res, err := Step(s, cur, st.in, st.seq, float64(1000+st.seq), defs)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if res.Outcome != st.outcome {
			t.Fatalf("step %d (%s): outcome %s (%v), want %s", i, st.in.Kind, res.Outcome, res.Reason, st.outcome)
		}
		if (res.Outcome == Rejected) != errors.Is(res.Reason, run.ErrRejected) {
			t.Errorf("step %d: reason %v", i, res.Reason)
		}
		cur = res.Run
	}
	if got := cur.Record.Applied; !reflect.DeepEqual(got, []uint64{2, 4, 6}) {
		t.Errorf("applied %v", got)
	}
	if got := cur.Record.Order; !reflect.DeepEqual(got, runrecord.Order{{From: 2, To: 7}}) {
		t.Errorf("order %v", got)
	}
	if n := len(cur.Record.Rejected); n != 2 || cur.Record.Rejected[0].Seq != 5 || cur.Record.Rejected[1].Seq != 7 {
		t.Errorf("rejected %+v, want the last two", cur.Record.Rejected)
	}
	if cur.State.Status != run.StatusDone || cur.Record.Status == nil || cur.Record.Status.Status != "done" {
		t.Errorf("state %s, status %+v", cur.State.Status, cur.Record.Status)
	}
	// The run is pinned: every step after the start asked for w/1.
	if asked[0] != "w@" || asked[len(asked)-1] != "w@w/1" {
		t.Errorf("definitions asked for %v", asked)
	}

	// Stream time that moves backwards is clamped to the run's.
	q, err := Step(s, Run{}, parse(names.Start("q"), `{"workflow":"w"}`), 9, 5000, defs)
	if err != nil {
		t.Fatal(err)
	}
	q, err = Step(s, q.Run, parse(names.Event("q", "x"), `1`), 10, 4000, defs)
	if err != nil || q.Outcome != Applied || q.Run.State.Control.Time != 5000 {
		t.Errorf("late input: %v %s, time %v", err, q.Outcome, q.Run.State.Control.Time)
	}
	if _, err := Step(s, Run{}, parse(names.Start("u"), `{"workflow":"nope"}`), 11, 1, defs); err == nil || !strings.Contains(err.Error(), "not deployed") {
		t.Errorf("a start of an undeployed workflow: %v", err)
	}
	res, err := Step(s, Run{}, parse(names.Start("p"), `{"workflow":"boom"}`), 12, 1, defs)
	if err != nil || res.Outcome != Failed || !errors.Is(res.Reason, ErrPermanent) || !strings.Contains(res.Reason.Error(), "boom") {
		t.Errorf("a panicking reducer: %s %v %v", res.Outcome, res.Reason, err)
	}
	if _, err := Step(s, Run{Record: &runrecord.Record{State: []byte(`{}`)}}, parse(names.Event("r", "x"), `1`), 13, 1, defs); !errors.Is(err, ErrPermanent) {
		t.Errorf("a record whose state does not decode: %v", err)
	}
}

func TestParseRefusesOversizedInputs(t *testing.T) {
	t.Parallel()
	s := Settings{MaxInputBytes: 16}.WithDefaults()
	big := []byte(`"` + strings.Repeat("x", 32) + `"`)
	in, err := Parse(s, s.Names.Event("r", "x"), nil, big)
	if !errors.Is(err, ErrMalformed) || in == nil || in.Refused() == nil {
		t.Errorf("oversized event: %v, %+v: want it malformed and addressed to its run", err, in)
	}
	if in, err := Parse(s, s.Names.Start("r"), nil, big); !errors.Is(err, ErrMalformed) || in != nil {
		t.Errorf("oversized start: %v, %+v: want it malformed and addressed to no run", err, in)
	}
}
