package step

import (
	"fmt"
	"testing"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
)

// The operator's requests join the parser's table (and so the fuzz
// target's seeds).
func init() {
	parseCases = append(parseCases, []parseCase{
		{
			name: "pause", subject: "jetflow.in.r1.pause", body: `{"reason":"upstream down","operator":"ana"}`,
			check: func(t *testing.T, in *Input) {
				if in.msg.Kind != run.KindPause || in.msg.Reason != "upstream down" || in.msg.Operator != "ana" {
					t.Errorf("pause %+v", in.msg)
				}
			},
		},
		{
			name: "resume empty", subject: "jetflow.in.r1.resume",
			check: func(t *testing.T, in *Input) {
				if in.msg.Kind != run.KindResume || in.msg.Reason != "" {
					t.Errorf("resume %+v", in.msg)
				}
			},
		},
		{
			name: "terminate", subject: "jetflow.in.r1.terminate", body: `{"reason":"fraud"}`,
			check: func(t *testing.T, in *Input) {
				if in.msg.Kind != run.KindTerminate || in.msg.Reason != "fraud" {
					t.Errorf("terminate %+v", in.msg)
				}
			},
		},
		{name: "terminate without reason", subject: "jetflow.in.r1.terminate", body: `{"operator":"ana"}`, bad: "reason is empty"},
		{name: "terminate empty", subject: "jetflow.in.r1.terminate", bad: "reason is empty"},
		{name: "pause string", subject: "jetflow.in.r1.pause", body: `"now"`, bad: "pause body"},
		{name: "resume bad field", subject: "jetflow.in.r1.resume", body: `{"reason":5}`, bad: "resume body"},
		{name: "pause extra token", subject: "jetflow.in.r1.pause.x", bad: "unexpected tokens"},
		{
			name: "postpone", subject: "jetflow.in.r1.postpone", body: `{"task":"check-stock","version":"1.2","deadline":61000}`,
			check: func(t *testing.T, in *Input) {
				if p := in.msg.Postpone; in.msg.Kind != run.KindPostpone || p == nil || p.Task != "check-stock" || p.Version != "1.2" {
					t.Errorf("postpone %+v", in.msg)
				}
			},
		},
		{name: "postpone bad task", subject: "jetflow.in.r1.postpone", body: `{"task":"a.b","version":"1"}`, bad: "postpone body"},
		{name: "postpone no version", subject: "jetflow.in.r1.postpone", body: `{"task":"a"}`, bad: "postpone body"},
		{name: "postpone empty", subject: "jetflow.in.r1.postpone", bad: "postpone body"},
	}...)
}

// TestDueAt: a deadline fire names the task versions it would fail; a
// stale fire, another timer and a program that is not the engine name
// none.
func TestDueAt(t *testing.T) {
	t.Parallel()
	wf, err := workflow.CompileJSON([]byte(`{"$workflow":"0.2","revision":"d/1","initial":"a","states":{
	 "a":{"work":{"task":"inc","version":"1"},"then":"b"},"b":{"final":true}}}`), workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := run.Options{Timeouts: func(string, string) run.Timeouts { return run.Timeouts{AttemptMs: 1000} }}
	st, _, err := run.Apply(wf, nil, run.Message{Kind: run.KindStart, RunID: "r1", Time: 1000}, opts)
	if err != nil {
		t.Fatal(err)
	}
	s := Settings{Tokens: testSigner}.WithDefaults()
	def := &Definition{Name: "d", Revision: "d/1", Program: Engine{Workflow: wf, Options: opts}}
	fire := func(id string, deadline float64) *Input {
		t.Helper()
		in, err := Parse(s, "jetflow.in.r1.timer", nil, []byte(fmt.Sprintf(`{"timer":%q,"deadline":%v}`, id, deadline)))
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	if got := DueAt(def, st, fire(run.DeadlineTimer, 2000), 2000); len(got) != 1 || got[0] != (run.TaskVersion{Task: "inc", Version: "1"}) {
		t.Fatalf("due %v, want inc@1", got)
	}
	// The scheduler's clock may trail: the deadline counts, not the time.
	if got := DueAt(def, st, fire(run.DeadlineTimer, 2000), 1990); len(got) != 1 {
		t.Fatalf("due a little early: %v", got)
	}
	for name, in := range map[string]*Input{"stale": fire(run.DeadlineTimer, 1500), "chart timer": fire("t1", 2000)} {
		if got := DueAt(def, st, in, 2000); got != nil {
			t.Errorf("%s: due %v", name, got)
		}
	}
	if got := DueAt(&Definition{Program: panics{}}, st, fire(run.DeadlineTimer, 2000), 2000); got != nil {
		t.Errorf("another program: due %v", got)
	}
}
