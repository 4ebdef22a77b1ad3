package worker

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

var testNames = subjects.Must("wt")

func validBody() wire.Invocation {
	return wire.Invocation{
		Run: "r1", Activation: `["r1","/states/a",1]`, State: "/states/a", Node: "n", Task: "t", Version: "1",
		Attempt: 1, Input: json.RawMessage(`{"x":1}`), Token: "k", Reply: testNames.Result("r1"),
	}
}

func TestParseInvocation(t *testing.T) {
	t.Parallel()
	enc := func(f func(*wire.Invocation)) string {
		w := validBody()
		f(&w)
		b, _ := json.Marshal(w)
		return string(b)
	}
	cases := []struct {
		name, body, want string // want: "" for accepted, else part of the error
	}{
		{"valid", enc(func(*wire.Invocation) {}), ""},
		{"unknown fields ignored", `{"run":"r1","activation":"a","node":"n","task":"t","version":"1","attempt":2,"token":"k","reply":"wt.in.r1.result","future":true}`, ""},
		{"with kept", enc(func(w *wire.Invocation) { w.With = json.RawMessage(`[1]`) }), ""},
		{"not json", "nope", "not a JSON invocation"},
		{"array", "[]", "not a JSON invocation"},
		{"trailing", enc(func(*wire.Invocation) {}) + "{}", "more than one JSON value"},
		{"trailing brace", enc(func(*wire.Invocation) {}) + "}", "more than one JSON value"},
		{"bad run", enc(func(w *wire.Invocation) { w.Run = "" }), "run id is empty"},
		{"no activation", enc(func(w *wire.Invocation) { w.Activation = "" }), "activation is missing"},
		{"no node", enc(func(w *wire.Invocation) { w.Node = "" }), "node is missing"},
		{"other task", enc(func(w *wire.Invocation) { w.Task = "u" }), `names task "u"`},
		{"other version", enc(func(w *wire.Invocation) { w.Version = "2" }), `version "2"`},
		{"attempt 0", enc(func(w *wire.Invocation) { w.Attempt = 0 }), "attempt 0"},
		{"no token", enc(func(w *wire.Invocation) { w.Token = "" }), "token is missing"},
		{"other run's reply", enc(func(w *wire.Invocation) { w.Reply = testNames.Result("r2") }), "not the result subject"},
		{"other prefix", enc(func(w *wire.Invocation) { w.Reply = subjects.Must("x").Result("r1") }), "not the result subject"},
		{"fractional attempt", `{"attempt":1.5}`, "not a JSON invocation"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w, err := parseInvocation([]byte(c.body), testNames, "t", "1")
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if len(w.Input) == 0 {
					t.Error("input not defaulted to null")
				}
				return
			}
			if err == nil || !errors.Is(err, errMalformed) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want errMalformed mentioning %q", err, c.want)
			}
		})
	}
}

func FuzzParseInvocation(f *testing.F) {
	b, _ := json.Marshal(validBody())
	for _, s := range []string{string(b), "{}", "null", `{"attempt":-1}`, string(b) + " 1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		w, err := parseInvocation(body, testNames, "t", "1")
		if err != nil {
			return
		}
		// Whatever is accepted is answerable: a result for it encodes and
		// goes to the run's result subject.
		if w.Reply != testNames.Result(w.Run) || w.Attempt < 1 || w.Token == "" || !json.Valid(w.Input) {
			t.Fatalf("accepted an unanswerable invocation %+v", w)
		}
		if _, err := json.Marshal(wire.Result{Activation: w.Activation, Node: w.Node, Attempt: w.Attempt, Token: w.Token, Output: w.Input}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestHeartbeatInterval(t *testing.T) {
	t.Parallel()
	cases := []struct {
		cfg, ackWait, want time.Duration
	}{
		{0, 9 * time.Second, 3 * time.Second},
		{0, 30 * time.Second, DefaultConsumerRefresh}, // at most ConsumerRefresh
		{time.Second, 30 * time.Second, time.Second},
		{time.Minute, 30 * time.Second, 15 * time.Second}, // capped at AckWait/2
		{0, 0, DefaultConsumerRefresh},
		{0, 2 * time.Millisecond, time.Millisecond},
	}
	for _, c := range cases {
		w := &Worker{cfg: Config{HeartbeatInterval: c.cfg}.WithDefaults()}
		if got := w.heartbeatInterval(c.ackWait); got != c.want {
			t.Errorf("heartbeatInterval(cfg %v, AckWait %v) = %v, want %v", c.cfg, c.ackWait, got, c.want)
		}
	}
}
