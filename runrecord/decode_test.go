package runrecord

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/jetflow/jetflow/wire"
)

// jsonRecord is the reference decoding: encoding/json over the struct.
func jsonRecord(data []byte) (*Record, error) {
	var r Record
	err := json.Unmarshal(data, &r)
	return &r, err
}

// checkParse fails when parseRecord accepts data but decodes it other
// than encoding/json does.
func checkParse(t *testing.T, data []byte) bool {
	t.Helper()
	got, ok := parseRecord(data)
	if !ok {
		return false
	}
	want, err := jsonRecord(data)
	if err != nil {
		t.Fatalf("parseRecord accepted what encoding/json refuses (%v):\n%q", err, data)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseRecord:\n%#v\nencoding/json:\n%#v\nof %q", got, want, data)
	}
	return true
}

func sampleRecords() map[string]*Record {
	state := json.RawMessage(`{"runId":"r1","n":[-0.5e+3,0,1E2,true,false,null],"s":"\u003c\"\\\/\b\f\n\r\t\u00e9 é\u2028"}`)
	return map[string]*Record{
		"state only": {State: state},
		"full": {
			State:  state,
			Status: &wire.Status{Run: "r1", Workflow: "w", Revision: "w/1", Status: "done", Result: json.RawMessage(`[1,{"a":{}}]`), Time: 1.5e12},
			Outbox: []Outgoing{
				{
					ID: "r1/1", Kind: OutInvoke, Subject: "p.task.echo.1", Data: json.RawMessage(`{"run":"r1","input":[]}`),
					Header: map[string]string{"Jetflow-Run": "r1", "Jetflow-Activation": "a"},
				},
				{ID: "r1/2", Kind: OutTimer, Subject: "p.sched.r1.t", Header: map[string]string{}, Data: json.RawMessage(`null`)},
				{ID: "r1/3", Kind: OutStatus, Subject: "p.status.r1", Data: json.RawMessage(`"x"`)},
			},
			Applied:      []uint64{1, 2, 18446744073709551615},
			Rejected:     []Rejection{{Seq: 3, Kind: "event", Reason: "stale", Time: 1e21}},
			Order:        Order{{1, 2}, {4, 4}},
			Timers:       true,
			DeadlineOnly: true,
			Tracked:      true,
			Armed:        map[string]int64{"d": 12, "r1": 4},
			Priority:     new(9),
		},
		"escaped strings": {State: state, Outbox: []Outgoing{{ID: "<x>", Kind: "é", Subject: "s", Data: json.RawMessage(`1`)}}},
		"failed, every status member": {State: state, Status: &wire.Status{
			Run: "r1", Workflow: "w", Revision: "w/1", Status: "failed", State: "/states/pay", Result: json.RawMessage(`null`),
			Error: &wire.RunError{Code: "JF2001", Path: "/nodes/task", Message: "task failed"},
			Time:  1796183856843.5, Since: 1e3, Reason: "operator said so", Operator: "ops@example",
		}},
		"status text escaped": {State: state, Status: &wire.Status{Run: "r1", Workflow: "w", Revision: "w/1", Status: "terminated", Reason: "a <b> é", Time: 2}},
	}
}

// TestParseRecordIsEncodingJSON: records Encode writes take the fast path
// and decode as encoding/json decodes them; other layouts, valid or not,
// are left to encoding/json.
func TestParseRecordIsEncodingJSON(t *testing.T) {
	t.Parallel()
	for name, r := range sampleRecords() {
		data, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		// An escaped string leaves the fast path (the status's alone: its
		// record's other members still take it).
		if !checkParse(t, data) && name != "escaped strings" {
			t.Errorf("%s: Encode's layout left the fast path:\n%s", name, data)
		}
	}
	for _, data := range []string{
		` { "state" : {"a" : [ 1 , 2 ] } , "timers" : false } `,
		`{"state":{},"outbox":[{"id":"a","kind":"k","subject":"s","data":1}],"applied":[1],"order":[[1,1]]}`,
		`{"state":{},"order":[[2,1]]}`, // a span that ends before it starts
		`{"state":{},"applied":[01]}`,  // not JSON
		`{"state":{},"applied":[1.0]}`, // not a uint64
		`{"state":{},"applied":[18446744073709551616]}`,
		`{"state":{},"applied":[]}`,    // empty, not nil
		`{"timers":true,"state":{}}`,   // another order
		`{"state":{},"State":{}}`,      // a second state, by case
		`{"state":{},"extra":1}`,       // an unknown field
		`{"state":{}}x`,                // trailing data
		"{\"state\":{\"a\":\"\x01\"}}", // a control character
		`{"state":{"a":"\q"}}`,         // a bad escape
		`{"state":{"a":"\u12"}}`,       // a short escape
		`{"state":[1,]}`, `{"state":{"a"}}`, `{"state":-}`, `{"state":1.}`, `{"state":1e}`, `{"state":tru}`,
		`{"state":{},"status":null,"rejected":null}`,
		`{"state":{},"status":{"run":5}}`, // a type encoding/json refuses
		`{" state":{}}`,                   // a space inside a key's quotes
		`{"state":{},"status":{" run":"r","workflow":"w","revision":"v","status":"done","time":1}}`,
		`{"state":{},"status":{"run":"r","workflow":"w","revision":"v","status":"done","state":"","time":1}}`,
		`{"state":{},"status":{"run":"r","workflow":"w","revision":"v","status":"done","time":1e400}}`,
		`{"state":{},"status":{"run":"r","workflow":"w","revision":"v","status":"done","error":null,"time":1}}`,
		`{"state":{},"status":{"time":1,"run":"r","workflow":"w","revision":"v","status":"done"}}`,
		"{\"state\":{\"a\":\"\xff\"},\"outbox\":[{\"id\":\"\xff\",\"kind\":\"k\",\"subject\":\"s\",\"data\":1}]}",
		`{"state":{},"outbox":[{"id":"a","kind":"k","subject":"s","header":null,"data":1}]}`,
		`{"state":{},"outbox":[{"id":"a","kind":"k","subject":"s","header":{"a":"1","a":"2"},"data":1}]}`,
	} {
		checkParse(t, []byte(data))
	}
}

// FuzzParseRecord: whatever the bytes, the fast path either steps aside
// or agrees with encoding/json.
func FuzzParseRecord(f *testing.F) {
	for _, r := range sampleRecords() {
		data, err := r.Encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"state":{"a":[1,-2.5e-3,"\u0041"]},"applied":[1,2],"order":[[1,2]],"timers":true}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkParse(t, data)
	})
}

func BenchmarkDecode(b *testing.B) {
	data, err := sampleRecords()["full"].Encode()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("parse", func(b *testing.B) {
		for b.Loop() {
			if _, err := Decode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := jsonRecord(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestStatusTakesTheFastPath: every status json.Marshal writes with plain
// text is read by parseStatus, as encoding/json reads it.
func TestStatusTakesTheFastPath(t *testing.T) {
	t.Parallel()
	for name, r := range sampleRecords() {
		if r.Status == nil {
			continue
		}
		data, err := json.Marshal(r.Status)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := parseStatus(data)
		if name == "status text escaped" {
			if ok {
				t.Errorf("%s: an escaped string took the fast path", name)
			}
			continue
		}
		var want wire.Status
		if err := json.Unmarshal(data, &want); err != nil || !ok || !reflect.DeepEqual(got, &want) {
			t.Errorf("%s: parseStatus %+v (%v), encoding/json %+v (%v)", name, got, ok, want, err)
		}
	}
}
