package runrecord

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/jetflow/jetflow/wire"
)

// marshalRecord is the reference encoding: encoding/json over the struct.
func marshalRecord(t testing.TB, r *Record) []byte {
	t.Helper()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestRecordEncodeIsEncodingJSON(t *testing.T) {
	t.Parallel()
	state := json.RawMessage(`{"runId":"r1","status":"running","seq":2,"context":{"input":"\u003cb\u003e"}}`)
	full := &Record{
		State: state,
		Status: &wire.Status{
			Run: "r1", Workflow: "w", Revision: "w/1", Status: "done", State: "s",
			Result: json.RawMessage(`{"a":[1,2.5,"x"]}`), Error: &wire.RunError{Code: "JF1", Path: "/a", Message: "<&>"}, Time: 1.5e12,
		},
		Outbox: []Outgoing{
			{
				ID: "r1/1", Kind: OutInvoke, Subject: "p.task.echo.1", Data: json.RawMessage(`{"run":"r1"}`),
				Header: map[string]string{"Jetflow-Run": "r1", "Jetflow-Activation": "a", "Z": "ü \"q\" \\ <x>\n\t\x01"},
			},
			{ID: "r1/2", Kind: OutTimer, Subject: "p.sched.r1.t", Data: nil},
			{ID: "r1/3", Kind: OutStatus, Subject: "p.status.r1", Header: map[string]string{}, Data: json.RawMessage(`{}`)},
		},
		Applied:      []uint64{1, 2, 18446744073709551615},
		Rejected:     []Rejection{{Seq: 3, Kind: "event", Reason: "stale <timer>", Time: 1e21}, {Seq: 4, Time: 0.000001}},
		Order:        Order{{1, 2}, {4, 4}},
		Timers:       true,
		DeadlineOnly: true,
		Tracked:      true,
		Armed:        map[string]int64{"t3": 9, "d": 12, "<~é>": -1},
		Priority:     new(7),
	}
	cases := map[string]*Record{
		"state only":   {State: state},
		"no state":     {},
		"empty outbox": {State: state, Outbox: []Outgoing{}, Applied: []uint64{}, Order: Order{}},
		"full":         full,
		"non-ascii id": {State: state, Outbox: []Outgoing{{ID: "r\u2028é", Kind: "k", Subject: "s", Data: json.RawMessage(`1`)}}},
		// Not round-tripped: both encoders write U+FFFD for invalid UTF-8.
		"invalid utf-8": {Outbox: []Outgoing{{ID: "\xff", Kind: "k", Subject: "s\xfe", Data: json.RawMessage(`1`)}}},
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := r.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if want := marshalRecord(t, r); !bytes.Equal(got, want) {
				t.Errorf("Encode:\n%s\nencoding/json:\n%s", got, want)
			}
			if len(r.State) == 0 {
				return
			}
			back, err := Decode(got)
			if err != nil {
				t.Fatal(err)
			}
			if again, _ := back.Encode(); !bytes.Equal(again, got) {
				t.Errorf("decoded and encoded again:\n%s\nfirst:\n%s", again, got)
			}
		})
	}
}

// FuzzRecordEncode: whatever strings and numbers a record holds, Encode
// writes what encoding/json writes.
func FuzzRecordEncode(f *testing.F) {
	f.Add("r1/1", "invoke", "p.task.a.1", "Jetflow-Run", "r1", `{"x":"<y>"}`, uint64(7), uint64(9), "reason")
	f.Add("\x00", "\u2029", "é", "", "\"\\", `"s"`, uint64(0), uint64(0), "\xff\xfe")
	f.Fuzz(func(t *testing.T, id, kind, subject, hk, hv, data string, a, b uint64, reason string) {
		raw, err := json.Marshal(data) // any valid JSON, as the dispatcher embeds
		if err != nil {
			t.Skip()
		}
		r := &Record{
			State:        raw,
			Status:       &wire.Status{Run: id, Status: kind, Result: raw},
			Outbox:       []Outgoing{{ID: id, Kind: kind, Subject: subject, Header: map[string]string{hk: hv, hv: hk}, Data: raw}},
			Applied:      []uint64{a, b},
			Rejected:     []Rejection{{Seq: a, Kind: kind, Reason: reason, Time: float64(b)}},
			Order:        Order{{a, b}},
			Timers:       a%2 == 0,
			DeadlineOnly: b%2 == 0,
			Tracked:      (a+b)%2 == 0,
			Armed:        map[string]int64{id: int64(a), hv: -int64(b)},
		}
		got, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if want := marshalRecord(t, r); !bytes.Equal(got, want) {
			t.Errorf("Encode:\n%q\nencoding/json:\n%q", got, want)
		}
	})
}

func BenchmarkRecordEncode(b *testing.B) {
	state, err := json.Marshal(map[string]any{
		"runId": "r1", "status": "running", "seq": 2,
		"context": map[string]any{"input": map[string]any{"x": 1}, "results": map[string]any{}, "visits": map[string]any{"work": 1}},
		"control": map[string]any{"active": []string{"work"}, "history": map[string]any{}, "timers": []any{}, "serial": 1, "time": 1.7e12},
		"pending": map[string]any{"state": "work", "visit": 1, "input": map[string]any{"x": 1}, "values": map[string]any{}},
	})
	if err != nil {
		b.Fatal(err)
	}
	r := &Record{
		State:   state,
		Status:  &wire.Status{Run: "r1", Workflow: "one", Revision: "one/1", Status: "running", Time: 1.7e12},
		Outbox:  []Outgoing{{ID: "r1/1", Kind: OutInvoke, Subject: "bench.task.echo.1", Header: map[string]string{"A": "r1", "B": "act"}, Data: json.RawMessage(`{"run":"r1","input":{"x":1}}`)}},
		Applied: []uint64{1, 2},
		Order:   Order{{1, 2}},
	}
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			if _, err := r.Encode(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
