package step

import (
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// parseCase is one input the parser is given and what it must make of it.
type parseCase struct {
	name    string
	subject string
	header  map[string]string
	body    string
	check   func(t *testing.T, in *Input)
	bad     string // substring of the error; "" means valid
}

var parseCases = []parseCase{
	{
		name: "expire", subject: "jetflow.in.r1.timer", header: map[string]string{wire.HeaderExpire: "1"}, body: `{"settled":1000,"status":"done","retention":60000}`,
		check: func(t *testing.T, in *Input) {
			if in.Kind != "expire" || in.Expire == nil || in.Expire.Settled != 1000 || in.Expire.Retention != 60000 {
				t.Errorf("parsed %+v", in.Expire)
			}
		},
	},
	{name: "expire without a settlement", subject: "jetflow.in.r1.timer", header: map[string]string{wire.HeaderExpire: "1"}, body: `{"status":"done"}`, bad: "names no settlement"},
	{name: "expire with no body", subject: "jetflow.in.r1.timer", header: map[string]string{wire.HeaderExpire: "1"}, body: ``, bad: "removal body"},
	{name: "expire subject", subject: "jetflow.in.r1.expire", body: `{"settled":1000,"status":"done","retention":60000}`, bad: "unknown input kind"},
	{
		name: "start", subject: "jetflow.in.r1.start", body: `{"workflow":"wf","revision":"v1","input":{"a":[1,2]}}`,
		check: func(t *testing.T, in *Input) {
			if in.msg.Kind != run.KindStart || in.Start.Workflow != "wf" || in.Start.Revision != "v1" || in.msg.RunID != "r1" {
				t.Errorf("parsed %+v / %+v", in.msg, in.Start)
			}
			if m, ok := in.msg.Input.(map[string]any); !ok || len(m["a"].([]any)) != 2 {
				t.Errorf("input %#v", in.msg.Input)
			}
		},
	},
	{
		name: "start without input", subject: "jetflow.in.r1.start", body: `{"workflow":"wf"}`,
		check: func(t *testing.T, in *Input) {
			if in.msg.Input != nil {
				t.Errorf("input %#v, want nil", in.msg.Input)
			}
		},
	},
	{
		name: "event", subject: "jetflow.in.r1.event.go", body: `{"n":1}`,
		check: func(t *testing.T, in *Input) {
			if e := in.msg.Event; e.Type != "go" || !e.HasPayload || e.Payload.(map[string]any)["n"] != 1.0 {
				t.Errorf("event %+v", e)
			}
		},
	},
	{
		name: "event without payload", subject: "jetflow.in.r1.event.go", body: ``,
		check: func(t *testing.T, in *Input) {
			if e := in.msg.Event; e.HasPayload || e.Payload != nil {
				t.Errorf("event %+v, want no payload", e)
			}
		},
	},
	{
		name: "event null payload", subject: "jetflow.in.r1.event.go", body: `null`,
		check: func(t *testing.T, in *Input) {
			if e := in.msg.Event; !e.HasPayload || e.Payload != nil {
				t.Errorf("event %+v, want a null payload", e)
			}
		},
	},
	{
		name: "result output", subject: "jetflow.in.r1.result", body: `{"activation":"a","node":"n","attempt":2,"output":"x"}`,
		check: func(t *testing.T, in *Input) {
			if r := in.msg.Result; r.Activation != "a" || r.Node != "n" || r.Attempt != 2 || r.Output != "x" || r.Error != nil {
				t.Errorf("result %+v", r)
			}
		},
	},
	{
		name: "result error", subject: "jetflow.in.r1.result", body: `{"activation":"a","error":{"message":"m","code":"C","nonRetryable":true}}`,
		check: func(t *testing.T, in *Input) {
			if e := in.msg.Result.Error; e == nil || e.Message != "m" || e.Code != "C" || !e.NonRetryable {
				t.Errorf("error %+v", e)
			}
		},
	},
	{
		name: "result null output", subject: "jetflow.in.r1.result", body: `{"activation":"a","output":null}`,
		check: func(t *testing.T, in *Input) {
			if r := in.msg.Result; r.Output != nil || r.Error != nil {
				t.Errorf("result %+v", r)
			}
		},
	},
	{
		name: "timer body", subject: "jetflow.in.r1.timer", body: `{"timer":"t1","deadline":1500}`,
		check: func(t *testing.T, in *Input) {
			if f := in.msg.Timer; f.ID != "t1" || f.Deadline != 1500 {
				t.Errorf("timer %+v", f)
			}
		},
	},
	{
		name: "timer headers", subject: "jetflow.in.r1.timer", header: map[string]string{wire.HeaderTimer: "t2", wire.HeaderDeadline: "2500.5", wire.HeaderScheduler: "jetflow.sched.r1.t2.7"},
		check: func(t *testing.T, in *Input) {
			if f := in.msg.Timer; f.ID != "t2" || f.Deadline != 2500.5 {
				t.Errorf("timer %+v", f)
			}
			if in.fired != "jetflow.sched.r1.t2.7" {
				t.Errorf("fired %q, want the schedule the server named", in.fired)
			}
		},
	},
	{
		name: "cancel", subject: "jetflow.in.r1.cancel", body: `{"reason":"enough"}`,
		check: func(t *testing.T, in *Input) {
			if in.msg.Kind != run.KindCancel || in.msg.Reason != "enough" {
				t.Errorf("cancel %+v", in.msg)
			}
		},
	},
	{name: "cancel empty", subject: "jetflow.in.r1.cancel"},
	{
		name: "redrive", subject: "jetflow.in.r1.redrive", body: `{"reason":"worker fixed"}`,
		check: func(t *testing.T, in *Input) {
			if in.msg.Kind != run.KindRedrive || in.msg.Reason != "worker fixed" {
				t.Errorf("redrive %+v", in.msg)
			}
		},
	},
	{name: "redrive empty", subject: "jetflow.in.r1.redrive"},
	{
		name: "redrive to a revision", subject: "jetflow.in.r1.redrive", body: `{"revision":"order/2"}`,
		check: func(t *testing.T, in *Input) {
			if in.msg.Kind != run.KindRedrive || in.redriveTo != "order/2" {
				t.Errorf("redrive %+v to %q", in.msg, in.redriveTo)
			}
		},
	},

	{name: "other prefix", subject: "other.in.r1.start", body: `{"workflow":"wf"}`, bad: "not a run input"},
	{name: "unknown kind", subject: "jetflow.in.r1.bogus", bad: "unknown input kind"},
	{name: "no kind", subject: "jetflow.in.r1", bad: "names no input kind"},
	{name: "extra token", subject: "jetflow.in.r1.start.x", bad: "unexpected tokens"},
	{name: "event without type", subject: "jetflow.in.r1.event", bad: "event.<type>"},
	{name: "start not json", subject: "jetflow.in.r1.start", body: `{`, bad: "start body"},
	{name: "start array", subject: "jetflow.in.r1.start", body: `[]`, bad: "JSON object"},
	{name: "start null", subject: "jetflow.in.r1.start", body: `null`, bad: "JSON object"},
	{name: "start bad workflow", subject: "jetflow.in.r1.start", body: `{"workflow":"a.b"}`, bad: "workflow name"},
	{name: "start no workflow", subject: "jetflow.in.r1.start", body: `{}`, bad: "workflow name"},
	{name: "start deep input", subject: "jetflow.in.r1.start", body: `{"workflow":"w","input":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`, bad: "too deep"},
	{name: "start wrong type", subject: "jetflow.in.r1.start", body: `{"workflow":7}`, bad: "start body"},
	{name: "event not json", subject: "jetflow.in.r1.event.go", body: `{"a":`, bad: "event payload"},
	{name: "event trailing data", subject: "jetflow.in.r1.event.go", body: `1 2`, bad: "event payload"},
	{name: "result both", subject: "jetflow.in.r1.result", body: `{"activation":"a","output":1,"error":{"message":"m"}}`, bad: "both output and error"},
	{name: "result no activation", subject: "jetflow.in.r1.result", body: `{"output":1}`, bad: "activation is empty"},
	// A JavaScript worker whose handler returned undefined sends this.
	{name: "result neither", subject: "jetflow.in.r1.result", body: `{"activation":"a","node":"n","attempt":1}`, bad: "neither output nor error"},
	{name: "result null error", subject: "jetflow.in.r1.result", body: `{"activation":"a","error":null}`, bad: "neither output nor error"},
	{name: "result error without message", subject: "jetflow.in.r1.result", body: `{"activation":"a","error":{"code":"X"}}`, bad: "error.message is empty"},
	{name: "result error blank message", subject: "jetflow.in.r1.result", body: `{"activation":"a","error":{"message":"  "}}`, bad: "error.message is empty"},
	{name: "result negative retry-after", subject: "jetflow.in.r1.result", body: `{"activation":"a","error":{"message":"m","retryAfterMs":-5}}`, bad: "error.retryAfterMs is -5"},
	{name: "result close without retry-after", subject: "jetflow.in.r1.result", body: `{"activation":"a","error":{"message":"m","closeTask":true}}`, bad: "closeTask needs error.retryAfterMs"},
	{name: "timer nameless", subject: "jetflow.in.r1.timer", body: `{"deadline":5}`, bad: "names no timer"},
	{name: "timer bad deadline", subject: "jetflow.in.r1.timer", header: map[string]string{wire.HeaderTimer: "t", wire.HeaderDeadline: "soon"}, bad: "deadline header"},
	{name: "cancel string", subject: "jetflow.in.r1.cancel", body: `"stop"`, bad: "cancel body"},
	{name: "redrive string", subject: "jetflow.in.r1.redrive", body: `"again"`, bad: "redrive body"},
	{name: "redrive wrong type", subject: "jetflow.in.r1.redrive", body: `{"reason":1}`, bad: "redrive body"},
	{name: "redrive bad revision", subject: "jetflow.in.r1.redrive", body: `{"revision":"a\nb"}`, bad: "not a revision name"},
	{name: "redrive extra token", subject: "jetflow.in.r1.redrive.now", bad: "unexpected tokens"},
}

func TestParseInput(t *testing.T) {
	t.Parallel()
	names := subjects.Must("")
	for _, c := range parseCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := nats.Header{}
			for k, v := range c.header {
				h.Set(k, v)
			}
			in, err := parseInput(names, c.subject, h, []byte(c.body))
			if c.bad != "" {
				if err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.bad) {
					t.Fatalf("err = %v, want ErrMalformed mentioning %q", err, c.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if in.RunID != "r1" || in.msg.RunID != "r1" {
				t.Errorf("run id %q / %q", in.RunID, in.msg.RunID)
			}
			if c.check != nil {
				c.check(t, in)
			}
		})
	}
}

// FuzzParseInput: any subject, header and body either parse into an input
// of a valid run id or are refused as malformed; nothing panics.
func FuzzParseInput(f *testing.F) {
	for _, c := range parseCases {
		f.Add(c.subject, c.header[wire.HeaderTimer], c.body)
	}
	names := subjects.Must("")
	f.Fuzz(func(t *testing.T, subject, timer, body string) {
		h := nats.Header{}
		if timer != "" {
			h.Set(wire.HeaderTimer, timer)
		}
		in, err := parseInput(names, subject, h, []byte(body))
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if in.Kind == subjects.KindExpire {
			// Retention's judgement, not the reducer's: no message.
			if in.Expire == nil || in.Expire.Settled <= 0 || in.msg.Kind != "" {
				t.Fatalf("removal parsed into %+v / %q", in.Expire, in.msg.Kind)
			}
			return
		}
		if in.Kind == subjects.KindMigrate {
			// The step's judgement, not the reducer's: no message kind.
			if in.migrate == nil || in.migrate.From == "" || in.migrate.To == "" || in.msg.Kind != "" {
				t.Fatalf("migration parsed into %+v / %q", in.migrate, in.msg.Kind)
			}
			return
		}
		if subjects.CheckRunID(in.RunID) != nil || in.msg.RunID != in.RunID || string(in.msg.Kind) != in.Kind {
			t.Fatalf("parsed %q into run %q kind %q / %q", subject, in.RunID, in.Kind, in.msg.Kind)
		}
		if in.Kind == subjects.KindStart && in.Start == nil {
			t.Fatal("start without a body")
		}
	})
}
