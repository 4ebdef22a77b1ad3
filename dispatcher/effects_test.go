package dispatcher

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

func TestRender(t *testing.T) {
	t.Parallel()
	names := subjects.Must("")
	st := &run.State{Workflow: "wf", Revision: "v1"}
	effects := []run.Effect{
		{ID: "i1", Invoke: &run.Invoke{Activation: "a", State: "/s", Node: "n", Task: "ship", Version: "1.2", Attempt: 2, Input: map[string]any{"b": 1.0, "a": nil}, With: "w", HasWith: true}},
		{ID: "t1", Arm: &run.ArmTimer{ID: "/states/wait#1", Deadline: 1700000000123}},
		{ID: "s1", Settled: &run.Settled{Status: run.StatusDone, State: "done"}},
	}
	out, status, err := render(names, testSigner, "r1", st, effects, 42)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 {
		t.Fatalf("%d messages, want 3", len(out))
	}

	inv := out[0]
	if inv.ID != "r1/i1" || inv.Kind != OutInvoke || inv.Subject != names.Task("ship", "1.2") {
		t.Errorf("invoke message %+v", inv)
	}
	var body wire.Invocation
	if err := json.Unmarshal(inv.Data, &body); err != nil {
		t.Fatal(err)
	}
	if body.Reply != names.Result("r1") || body.Run != "r1" || body.Attempt != 2 || string(body.Input) != `{"a":null,"b":1}` || string(body.With) != `"w"` || !testSigner.Verify("r1", "a", "n", 2, body.Token) {
		t.Errorf("invocation %+v", body)
	}
	if inv.Header[wire.HeaderRunID] != "r1" || inv.Header[wire.HeaderActivation] != "a" {
		t.Errorf("invoke headers %v", inv.Header)
	}
	if m := inv.msg(); m.Header.Get(wire.HeaderMsgID) != "r1/i1" {
		t.Errorf("invoke Nats-Msg-Id %q", m.Header.Get(wire.HeaderMsgID))
	}

	tm := out[1]
	if !strings.HasPrefix(tm.Subject, names.Prefix()+".sched.r1.~") {
		t.Errorf("schedule subject %q: a timer id with '/' and '#' must be encoded", tm.Subject)
	}
	at, ok := strings.CutPrefix(tm.Header[headerSchedule], "@at ")
	if !ok {
		t.Fatalf("schedule header %q", tm.Header[headerSchedule])
	}
	due, err := time.Parse(time.RFC3339Nano, at)
	if err != nil || due.UnixMilli() != 1700000000123 {
		t.Errorf("schedule %q (%v), want 1700000000123 ms with its milliseconds", at, err)
	}
	if tm.Header[headerScheduleTarget] != names.Fired("r1") || tm.Header[headerScheduleTTL] != "604800" ||
		tm.Header[wire.HeaderTimer] != "/states/wait#1" || tm.Header[wire.HeaderDeadline] != "1700000000123" {
		t.Errorf("schedule headers %v", tm.Header)
	}
	// The fired message, copied onto the run's timer subject, is parsed
	// back into the same timer.
	in, err := parseInput(names, names.Timer("r1"), tm.msg().Header, tm.Data)
	if err != nil || in.msg.Timer.ID != "/states/wait#1" || in.msg.Timer.Deadline != 1700000000123 {
		t.Errorf("fire parses to %+v, %v", in, err)
	}

	if out[2].Kind != OutStatus || out[2].Subject != names.Status("r1") || out[2].msg().Header.Get(wire.HeaderMsgID) != "" {
		t.Errorf("status message %+v", out[2])
	}
	if status == nil || status.Status != "done" || status.Workflow != "wf" || status.Revision != "v1" || status.Time != 42 || string(status.Result) != "null" {
		t.Errorf("status %+v", status)
	}
}

// A schedule saved in an outbox before the timer stream existed targets
// the input stream's timer subject, which the timer stream refuses: it is
// published with the fired subject instead.
func TestLegacyTimerIsRetargeted(t *testing.T) {
	t.Parallel()
	names := subjects.Must("")
	old := Outgoing{ID: "r1/t1", Kind: OutTimer, Subject: names.Schedule("r1", "t1"), Header: map[string]string{
		headerSchedule: "@at 2026-11-29T17:08:53.574Z", headerScheduleTarget: names.Timer("r1"),
	}}
	m := old.msg()
	legacyTimer(names, m)
	if m.Header.Get(headerScheduleTarget) != names.Fired("r1") || m.Header.Get(headerScheduleTTL) != firedTTL {
		t.Errorf("legacy schedule headers %v", m.Header)
	}
	m.Header.Set(headerScheduleTarget, "elsewhere")
	legacyTimer(names, m)
	if m.Header.Get(headerScheduleTarget) != "elsewhere" {
		t.Errorf("a target other than a timer subject was rewritten: %v", m.Header)
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
		if _, _, err := render(names, testSigner, "r", &run.State{}, []run.Effect{e}, 0); err == nil {
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

func TestAppendBounded(t *testing.T) {
	t.Parallel()
	var s []uint64
	for i := range uint64(10) {
		prev := s
		s = appendBounded(s, i, 3)
		if len(prev) > 0 && &prev[0] == &s[0] {
			t.Fatal("appendBounded shares its result with its input")
		}
	}
	if len(s) != 3 || s[0] != 7 || s[2] != 9 {
		t.Errorf("got %v, want [7 8 9]", s)
	}
}

func TestConfigDefaultsAndValidation(t *testing.T) {
	t.Parallel()
	c := Config{}.WithDefaults()
	if err := c.validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if c.Concurrency != 16 || c.AckWait != 30*time.Second || c.Names.Prefix() != "jetflow" || c.Logger == nil {
		t.Errorf("defaults %+v", c)
	}
	for name, bad := range map[string]Config{
		"negative concurrency":          {Concurrency: -1},
		"retry cap below delay":         {RetryDelay: time.Second, MaxRetryDelay: time.Millisecond},
		"ack pending below concurrency": {Concurrency: 64, MaxAckPending: 8},
	} {
		if err := bad.WithDefaults().validate(); err == nil {
			t.Errorf("%s: validated", name)
		}
	}
	if _, err := New(nil, nil, nil, Config{}); err == nil {
		t.Error("New accepted a nil registry and JetStream")
	}
}
