package replay_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/subjects"
)

func TestDiverge(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, a, b, at, av, bv string
	}{
		{"equal", `{"a":1,"b":[1,2]}`, `{"b":[1,2],"a":1}`, "", "", ""},
		{"scalar", `{"generation":3}`, `{"generation":4}`, "/generation", "3", "4"},
		{"first in key order", `{"z":1,"a":{"x":true}}`, `{"z":2,"a":{"x":false}}`, "/a/x", "true", "false"},
		{"array element", `{"l":[1,2,3]}`, `{"l":[1,5,3]}`, "/l/1", "2", "5"},
		{"longer array", `{"l":[1]}`, `{"l":[1,2]}`, "/l/1", "", "2"},
		{"missing key", `{"a":1}`, `{"a":1,"b":null}`, "/b", "", "null"},
		{"escaped key", `{"a/b~c":1}`, `{"a/b~c":2}`, "/a~1b~0c", "1", "2"},
		{"type change", `{"a":{}}`, `{"a":[]}`, "/a", "{}", "[]"},
		{"large numbers stay exact", `{"n":9007199254740993}`, `{"n":9007199254740992}`, "/n", "9007199254740993", "9007199254740992"},
		{"not JSON", `{`, `{}`, "", "{", "{}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			at, av, bv := replay.Diverge([]byte(c.a), []byte(c.b))
			if at != c.at || av != c.av || bv != c.bv {
				t.Errorf("Diverge = %q %q %q, want %q %q %q", at, av, bv, c.at, c.av, c.bv)
			}
		})
	}
}

var lineNames = subjects.Must("")

func TestLine(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 16, 46, 0, 123e6, time.UTC)
	hdr := nats.Header{}
	hdr.Set("Jetflow-Timer", "t1")
	cases := []struct {
		name, subject, data string
		header              nats.Header
		want                string
	}{
		{"start", lineNames.Start("r"), `{"workflow":"order","input":{"sku":"a"}}`, nil, "start   workflow=order revision=(latest) input=11B"},
		{"event", lineNames.Event("r", "payment"), `{"amount": 10}`, nil, `event   type=payment payload={"amount":10}`},
		{"event without payload", lineNames.Event("r", "go"), ``, nil, "event   type=go (no payload)"},
		{"result ok", lineNames.Result("r"), `{"activation":"a","node":"stock","attempt":1,"token":"x","output":true}`, nil, "result  node=stock attempt=1 ok output=true"},
		{
			"result error", lineNames.Result("r"), `{"activation":"a","node":"n","attempt":2,"token":"x","error":{"message":"boom","code":"E1","nonRetryable":true}}`, nil,
			`result  node=n attempt=2 error "boom" code=E1 non-retryable`,
		},
		{"timer from header", lineNames.Timer("r"), ``, hdr, "timer   timer=t1"},
		{"cancel", lineNames.Cancel("r"), `{"reason":"changed\nmind"}`, nil, `cancel  reason="changed mind"`},
		{"malformed", lineNames.Result("r"), `[]`, nil, "result  MALFORMED (refused by the dispatchers): malformed input: result body: expected a JSON object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := replay.Line(lineNames, replay.Message{Seq: 42, Time: at, Subject: c.subject, Header: c.header, Data: []byte(c.data)})
			if want := "2026-11-29T16:46:00.123Z       42  " + c.want; got != want {
				t.Errorf("Line =\n%q, want\n%q", got, want)
			}
		})
	}
}

// FuzzSummarize: any message summarises to one bounded line.
func FuzzSummarize(f *testing.F) {
	f.Add("start", `{"workflow":"w","input":1}`)
	f.Add("event.x", `{"a":[1,2,3]}`)
	f.Add("result", `{"activation":"a","node":"n","attempt":1,"token":"t","error":{"message":"m\n"}}`)
	f.Add("timer", `{"timer":"t","deadline":1e300}`)
	f.Add("cancel", `{"reason":"\u00e9\u00e9\u00e9"}`)
	f.Add("nope", "\xff\xfe")
	f.Fuzz(func(t *testing.T, tail, data string) {
		m := replay.Message{Subject: "jetflow.in.r." + tail, Data: []byte(data)}
		kind, summary := replay.Summarize(lineNames, m)
		if kind == "" || strings.ContainsAny(summary, "\n\r") || len(summary) > 400 {
			t.Fatalf("Summarize(%q, %q) = %q, %q", tail, data, kind, summary)
		}
	})
}
