package step

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
)

// Resets join the parser's table (and so the fuzz target's seeds).
func init() {
	parseCases = append(parseCases, []parseCase{
		{
			name: "reset", subject: "jetflow.in.r1.reset", body: `{"to":7,"reason":"rerun","operator":"ana"}`,
			check: func(t *testing.T, in *Input) {
				if in.msg.Kind != run.KindReset || in.ResetTo() != 7 || in.msg.Reason != "rerun" || in.msg.Operator != "ana" {
					t.Errorf("reset %+v to %d", in.msg, in.ResetTo())
				}
			},
		},
		{name: "reset without to", subject: "jetflow.in.r1.reset", body: `{"reason":"rerun"}`, bad: "to is missing"},
		{name: "reset empty", subject: "jetflow.in.r1.reset", bad: "reset body"},
		{name: "reset negative", subject: "jetflow.in.r1.reset", body: `{"to":-1}`, bad: "reset body"},
		{name: "reset string", subject: "jetflow.in.r1.reset", body: `"7"`, bad: "reset body"},
		{name: "reset extra token", subject: "jetflow.in.r1.reset.now", bad: "unexpected tokens"},
	}...)
}

// resetDoc runs one task, then waits for "go".
const resetDoc = `{"$workflow":"0.2","revision":"rs/1","initial":"a","states":{
 "a":{"work":{"task":"inc","version":"1"},"then":"w"},
 "w":{"on":[{"event":"go","to":"done"}]},
 "done":{"final":true}}}`

// walk steps inputs as a replay does, keeping the line, and resolves a
// reset from it.
type walk struct {
	t    *testing.T
	s    Settings
	defs Definitions
	cur  Run
}

func (w *walk) step(seq uint64, subject, body string, now float64) Result {
	w.t.Helper()
	in, err := Parse(w.s, subject, nil, []byte(body))
	if in == nil {
		w.t.Fatalf("parse %s: %v", subject, err)
	}
	res, err := Step(w.s, w.cur, in, seq, now, w.defs)
	if err == nil && res.Outcome == Rewind {
		at, why := w.cur.Line.Point(in.RunID, in.ResetTo(), seq)
		res, err = Reset(w.s, res.Run, in, seq, now, w.defs, at, why)
	}
	if err != nil {
		w.t.Fatal(err)
	}
	res.Run.Line = w.cur.Line.Took(in, seq, res)
	w.cur = res.Run
	return res
}

// TestResetAlongTheLine: a reset goes back to a point on the run's line,
// takes what followed off it, and refuses points it cannot go back to,
// recording why.
func TestResetAlongTheLine(t *testing.T) {
	t.Parallel()
	wf, err := workflow.CompileJSON([]byte(resetDoc), workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := Settings{Tokens: testSigner}.WithDefaults()
	defs := DefinitionsFunc(func(string, string) (*Definition, error) {
		return &Definition{Name: "rs", Revision: "rs/1", Program: Engine{Workflow: wf}}, nil
	})
	w := &walk{t: t, s: s, defs: defs}
	n := s.Names
	w.step(1, n.Start("r"), `{"workflow":"rs"}`, 1000)
	inv := w.cur.State.Work.Running["task"]
	tok := s.Tokens.Sign("r", w.cur.State.Work.Activation, "task", inv.Attempt)
	result, _ := json.Marshal(map[string]any{"activation": w.cur.State.Work.Activation, "node": "task", "attempt": inv.Attempt, "output": 1, "token": tok})
	w.step(3, n.Result("r"), string(result), 2000)
	w.step(4, n.Event("r", "go"), ``, 3000)
	if w.cur.State.Status != run.StatusDone {
		t.Fatalf("the run is %s, want done", w.cur.State.Status)
	}
	refused := func(seq uint64, body, want string) {
		t.Helper()
		res := w.step(seq, n.Reset("r"), body, 5000)
		if res.Outcome != Rejected || !errors.Is(res.Reason, run.ErrRejected) || !strings.Contains(res.Reason.Error(), want) {
			t.Fatalf("reset %s: %s %v, want a refusal saying %q", body, res.Outcome, res.Reason, want)
		}
		if r := res.Run.Record.Rejected[len(res.Run.Record.Rejected)-1]; r.Seq != seq || r.Kind != "reset" {
			t.Fatalf("refusal recorded as %+v", r)
		}
	}
	refused(5, `{"to":9}`, "not before the reset")
	refused(6, `{"to":2}`, "is not an input run")
	refused(7, `{"to":6}`, "is the latest input")

	res := w.step(8, n.Reset("r"), `{"to":3}`, 6000)
	if res.Outcome != Applied || res.Run.State.Status != run.StatusWaiting || res.Status == nil || res.Status.Status != "waiting" {
		t.Fatalf("reset to the wait: %s %v, status %+v", res.Outcome, res.Reason, res.Status)
	}
	if !res.Run.Record.HasApplied(4) || !res.Run.Record.HasApplied(8) {
		t.Fatalf("the record forgets inputs: applied %v", res.Run.Record.Applied)
	}
	for _, seq := range []uint64{4, 5, 6, 7} {
		if by, to, ok := w.cur.Line.Superseded(seq); !ok || by != 8 || to != 3 {
			t.Errorf("input %d superseded %v by %d to %d, want by the reset at 8 back to 3", seq, ok, by, to)
		}
	}
	refused(9, `{"to":4}`, "was superseded by the reset at seq 8")

	// Paused: refused before any history is read.
	w.step(10, n.Pause("r"), `{}`, 7000)
	in, _ := Parse(s, n.Reset("r"), nil, []byte(`{"to":3}`))
	if res, err := Step(s, w.cur, in, 11, 8000, defs); err != nil || res.Outcome != Rejected || !strings.Contains(res.Reason.Error(), "is paused") {
		t.Fatalf("reset of a paused run: %s %v %v", res.Outcome, res.Reason, err)
	}
}
