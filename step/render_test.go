package step

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

func TestRender(t *testing.T) {
	t.Parallel()
	names := subjects.Must("")
	st := &run.State{Workflow: "wf", Revision: "v1"}
	effects := []run.Effect{
		{ID: "i1", Invoke: &run.Invoke{Activation: "a", State: "/s", Node: "n", Task: "ship", Version: "1.2", Attempt: 2, Input: map[string]any{"b": 1.0, "a": nil, "10": true, "9": false}, With: "w", HasWith: true}},
		{ID: "t1", Arm: &run.ArmTimer{ID: "/states/wait#1", Deadline: 1700000000123}},
		{ID: "s1", Settled: &run.Settled{Status: run.StatusDone, State: "done", Result: map[string]any{"b": 1.0, "10": 2.0, "9": 3.0}}},
	}
	out, status, err := Render(names, testSigner, "r1", st, effects, 42)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 {
		t.Fatalf("%d messages, want 3", len(out))
	}

	// Objects are written as the reference's handler sees them: index keys
	// first by number ("9" before "10"), then the rest in UTF-16 order.
	inv := out[0]
	if inv.ID != "r1/i1" || inv.Kind != runrecord.OutInvoke || inv.Subject != names.Task("ship", "1.2") {
		t.Errorf("invoke message %+v", inv)
	}
	var body wire.Invocation
	if err := json.Unmarshal(inv.Data, &body); err != nil {
		t.Fatal(err)
	}
	if body.Reply != names.Result("r1") || body.Run != "r1" || body.Attempt != 2 || string(body.Input) != `{"9":false,"10":true,"a":null,"b":1}` || string(body.With) != `"w"` || !testSigner.Verify("r1", "a", "n", 2, body.Token) {
		t.Errorf("invocation %+v", body)
	}
	if inv.Header[wire.HeaderRunID] != "r1" || inv.Header[wire.HeaderActivation] != "a" {
		t.Errorf("invoke headers %v", inv.Header)
	}
	if m := Msg(inv); m.Header.Get(wire.HeaderMsgID) != "r1/i1" {
		t.Errorf("invoke Nats-Msg-Id %q", m.Header.Get(wire.HeaderMsgID))
	}

	tm := out[1]
	if !strings.HasPrefix(tm.Subject, names.Prefix()+".sched.r1.~") {
		t.Errorf("schedule subject %q: a timer id with '/' and '#' must be encoded", tm.Subject)
	}
	at, ok := strings.CutPrefix(tm.Header[wire.HeaderSchedule], "@at ")
	if !ok {
		t.Fatalf("schedule header %q", tm.Header[wire.HeaderSchedule])
	}
	due, err := time.Parse(time.RFC3339Nano, at)
	if err != nil || due.UnixMilli() != 1700000000123 {
		t.Errorf("schedule %q (%v), want 1700000000123 ms with its milliseconds", at, err)
	}
	if tm.Header[wire.HeaderScheduleTarget] != names.Fired("r1") || tm.Header[wire.HeaderScheduleTTL] != "604800" ||
		tm.Header[wire.HeaderTimer] != "/states/wait#1" || tm.Header[wire.HeaderDeadline] != "1700000000123" {
		t.Errorf("schedule headers %v", tm.Header)
	}
	// The fired message, copied onto the run's timer subject, is parsed
	// back into the same timer.
	in, err := parseInput(names, names.Timer("r1"), Msg(tm).Header, tm.Data)
	if err != nil || in.msg.Timer.ID != "/states/wait#1" || in.msg.Timer.Deadline != 1700000000123 {
		t.Errorf("fire parses to %+v, %v", in, err)
	}

	if out[2].Kind != runrecord.OutStatus || out[2].Subject != names.Status("r1") || Msg(out[2]).Header.Get(wire.HeaderMsgID) != "" {
		t.Errorf("status message %+v", out[2])
	}
	if status == nil || status.Status != "done" || status.Workflow != "wf" || status.Revision != "v1" || status.Time != 42 || string(status.Result) != `{"9":3,"10":2,"b":1}` {
		t.Errorf("status %+v", status)
	}
}

func TestRenderRefusesUnexpressibleEffects(t *testing.T) {
	t.Parallel()
	names := subjects.Must("")
	for name, e := range map[string]run.Effect{
		"no id":        {Invoke: &run.Invoke{Task: "t", Version: "1"}},
		"no field":     {ID: "x"},
		"bad task":     {ID: "x", Invoke: &run.Invoke{Task: "a.b", Version: "1"}},
		"bad version":  {ID: "x", Invoke: &run.Invoke{Task: "t", Version: "1 2"}},
		"bad input":    {ID: "x", Invoke: &run.Invoke{Task: "t", Version: "1", Input: func() {}}},
		"nameless arm": {ID: "x", Arm: &run.ArmTimer{}},
	} {
		if _, _, err := Render(names, testSigner, "r", &run.State{}, []run.Effect{e}, 0); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
}

func TestTimerTokenIsInjective(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	for _, id := range []string{"t1", "~dDE", "/a", "/a#1", "a.b", "a b", "YS5i", "~YS5i", "", "é"} {
		tok := timerToken(id)
		if strings.ContainsAny(tok, ".*> \t") || tok == "" {
			t.Errorf("timerToken(%q) = %q is not one subject token", id, tok)
		}
		if other, dup := seen[tok]; dup {
			t.Errorf("timerToken(%q) = timerToken(%q) = %q", id, other, tok)
		}
		seen[tok] = id
	}
}

// TestStepRecordsEncodeAsEncodingJSON drives a real run through Step (its
// status encoded once, for the announcement) and checks every record it
// produces.
func TestStepRecordsEncodeAsEncodingJSON(t *testing.T) {
	t.Parallel()
	wf, err := workflow.CompileJSON([]byte(oneTask), workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := Settings{Tokens: testSigner}.WithDefaults()
	defs := DefinitionsFunc(func(string, string) (*Definition, error) {
		return &Definition{Name: "one", Revision: "one/1", Program: Engine{Workflow: wf}}, nil
	})
	names := s.Names
	start, err := Parse(s, names.Start("r1"), nil, []byte(`{"workflow":"one","input":{"html":"<b>&</b>"}}`))
	if err != nil {
		t.Fatal(err)
	}
	check := func(r *runrecord.Record) {
		t.Helper()
		got, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("Encode:\n%s\nencoding/json:\n%s", got, want)
		}
	}
	t1, err := Step(s, Run{}, start, 1, 1000, defs)
	if err != nil || t1.Outcome != Applied || t1.Run.Record.Status == nil {
		t.Fatalf("start: %+v, %v", t1, err)
	}
	check(t1.Run.Record)
	var inv wire.Invocation
	if err := json.Unmarshal(t1.Run.Record.Outbox[0].Data, &inv); err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(wire.Result{Activation: inv.Activation, Node: inv.Node, Attempt: inv.Attempt, Token: inv.Token, Output: inv.Input})
	if err != nil {
		t.Fatal(err)
	}
	result, err := Parse(s, names.Result("r1"), nil, body)
	if err != nil {
		t.Fatal(err)
	}
	t2, err := Step(s, t1.Run, result, 2, 1001, defs)
	if err != nil || t2.Run.Record.Status == nil || t2.Run.Record.Status.Status != wire.StatusDone {
		t.Fatalf("result: %+v, %v", t2, err)
	}
	check(t2.Run.Record)
	// A rejected input keeps the record's status and its encoding.
	t3, err := Step(s, t2.Run, result, 3, 1002, defs)
	if err != nil || t3.Outcome != Rejected {
		t.Fatalf("a repeated result: %+v, %v", t3, err)
	}
	check(t3.Run.Record)
}

// oneTask is a workflow that runs task echo@1 on its input and ends with
// the task's output.
const oneTask = `{
  "$workflow": "0.2",
  "revision": "one/1",
  "initial": "work",
  "states": {
    "work": {"work": {"task": "echo", "version": "1"}, "then": "done"},
    "done": {"final": true}
  }
}`
