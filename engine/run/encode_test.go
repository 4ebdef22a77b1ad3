package run

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/jetflow/jetflow/engine/statechart"
	"github.com/jetflow/jetflow/engine/value"
)

// TestMain checks every state the tests encode against encoding/json
// (VerifyEncoding), unless benchmarks run, which measure Encode alone.
func TestMain(m *testing.M) {
	flag.Parse()
	if flag.Lookup("test.bench").Value.String() == "" {
		VerifyEncoding()
	}
	os.Exit(m.Run())
}

// fullState sets every member of a state, the rare ones included, with
// values that need escaping, so that Encode is compared with
// encodeReflect on each.
func fullState(v any) *State {
	ev := Event{Type: "pay<>&\u2028", Payload: v, HasPayload: true}
	return &State{
		Workflow: "w\"f", Revision: "r/1", RunID: "r\x00é\xff", Status: StatusWaiting,
		Error:      &Failure{Code: "JF1", Path: "/states/a", Message: "m<x>", Unlocated: true},
		Generation: 7,
		Context: Context{
			Input: v, Data: map[string]any{"b": []any{1.5, "x", nil, true}, "a": v}, Event: &ev,
			Results: map[string]any{"z": v, "a": 1e21, "m": 1e-7, "n": math.Copysign(0, -1)}, Visits: map[string]any{"s": 2.0},
		},
		Pending: &Pending{State: "/states/a", Visit: 2, Input: v, Values: map[string]any{"k": v}, Identity: map[string]any{"i": "x"}, Result: v, HasResult: true},
		Work: &Work{
			Activation: `["r","/states/a",2]`, Values: map[string]any{"n": v},
			Running: map[string]*Attempt{
				"b": {
					Attempt: 2, Waiting: true, RetryAt: 12.5, Deferred: 1, Deadline: 99, Scheduled: 3,
					Paused: &Paused{Since: 1, Was: StatusRunning, Reason: "r"}, Held: []Held{{Kind: KindEvent, Time: 4, Event: &ev}},
					Terminated: &Termination{Time: 5, Reason: "t"},
				},
				"a": {Attempt: 1}, "nil": nil,
			},
			Retries: map[string]string{"t2": "b", "t1": "a<"}, Base: 4,
			Ordered: Ordered{"q": builtObject(), "p": []any{builtObject(), map[string]any{"b": 1.0, "a": "<"}}},
		},
		Buffered: []Event{ev, {Type: "bare"}},
		Seq:      9, Retries: 3, Deadline: 1733200000123.5,
		Paused: &Paused{Since: 1, Was: StatusRunning, Reason: "why", Operator: "op"},
		Held: []Held{
			{Kind: KindEvent, Time: 4, Event: &ev},
			{Kind: KindResult, Time: 5, Result: &heldResult{Activation: "a", Node: "t", Attempt: 1, Output: &keptValue{builtObject()}}},
			{Kind: KindResult, Time: 6, Result: &heldResult{Activation: "a", Node: "u", Attempt: 1, Output: &keptValue{map[string]any{"10": v, "9": "<"}}}},
			{Kind: KindResult, Time: 7, Result: &heldResult{Activation: "a", Node: "v", Attempt: 2}},
			{Kind: KindResult, Time: 8, Result: &heldResult{Activation: "a", Node: "w", Attempt: 1, Output: &keptValue{keysOrderObject()}}},
		},
		Terminated: &Termination{Time: 5, Reason: "done", Operator: "op"},
		Kept:       Kept{"k": v, "o": builtObject(), "p": map[string]any{"10": 1.0, "9": []any{builtObject()}}, "q": keysOrderObject()}, Redrives: 1, Resets: 2, AttemptFloor: 3, StartRevision: "r/0",
		Control: statechart.State{
			Active: []string{"/states/a", "<b>"}, History: map[string][]string{"h": {"x"}, "g": nil},
			Timers: []statechart.Timer{{Transition: 1, At: 1e-9, Token: 5}}, Serial: 5, Time: 1733200000000,
		},
	}
}

func TestEncodeIsEncodingJSON(t *testing.T) {
	t.Parallel()
	values := []any{
		nil, true, 0.0, -1.25, 1e300, 5e-324, "s<>&\u2029\x7f\xc3",
		[]any{},
		map[string]any{},
		[]any{map[string]any{"é": nil, "a": []any{}}},
		map[string]string{"go": "value"},
		int64(3),
	}
	states := []*State{{RunID: "r", Control: statechart.State{Active: []string{"a"}}}}
	for _, v := range values {
		states = append(states, fullState(v))
	}
	for i, st := range states {
		want, err := encodeReflect(st)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Encode(st)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("state %d: Encode wrote\n%s\nwant\n%s (%v)", i, got, want, err)
		}
	}
}

func TestEncodeRefusesWhatEncodingJSONRefuses(t *testing.T) {
	t.Parallel()
	for _, v := range []any{math.NaN(), math.Inf(1), []any{math.Inf(-1)}, map[string]any{"x": math.NaN()}} {
		if _, err := Encode(fullState(v)); err == nil {
			t.Errorf("Encode of a state holding %v: no error", v)
		}
	}
}

func FuzzEncode(f *testing.F) {
	f.Add([]byte(`{"a":[1,2.5e-8,"x<y"],"b":null,"c":{"d":true}}`), 1.5, "wait")
	f.Add([]byte(`"\u2028\ud800"`), 1e21, "")
	f.Fuzz(func(t *testing.T, doc []byte, num float64, s string) {
		var v any
		if json.Unmarshal(doc, &v) != nil {
			return
		}
		st := fullState(v)
		st.Deadline, st.Control.Time, st.RunID, st.Control.Active = num, num, s, []string{s}
		st.Context.Results[s] = num
		want, wantErr := encodeReflect(st)
		got, err := Encode(st)
		if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("Encode wrote\n%s (%v)\nwant\n%s (%v)", got, err, want, wantErr)
		}
	})
}

// builtObject is an object a query built, in an order that is not Keys
// order, holding one that is.
func builtObject() *value.Object {
	o := value.NewObject(0)
	o.Set("zeta", "&")
	inner := value.NewObject(0)
	inner.Set("10", 1.0)
	inner.Set("9", nil)
	o.Set("alpha", inner)
	o.Set("7", []any{})
	return o
}

// keysOrderObject is an object built at run time whose walk is Keys
// order (array-index keys first): its text reads back as a map.
func keysOrderObject() *value.Object {
	o := value.NewObject(0)
	o.Set("9", 1.0)
	o.Set("10", []any{2.0})
	o.Set("a", "<")
	return o
}

// TestDecodeReadsBackWhatEncodeWrote: a state whose activation keeps
// ordered values reads back with them in their order and encodes to the
// same bytes (replay compares them); a state stored before it kept any
// reads back without them and encodes as it was stored.
func TestDecodeReadsBackWhatEncodeWrote(t *testing.T) {
	t.Parallel()
	for _, st := range []*State{fullState(map[string]any{"a": 1.0}), fullState(nil)} {
		st.RunID = "r" // fullState's invalid UTF-8 reads back as U+FFFD
		data, err := Encode(st)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Encode(back)
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("read back and encoded again\n%s\nnot\n%s (%v)", again, data, err)
		}
		q, ok := back.Work.Ordered["q"].(*value.Object)
		if !ok {
			t.Fatalf("ordered value q read back as %T", back.Work.Ordered["q"])
		}
		if keys, _ := value.Ordered(q); !slices.Equal(keys, []string{"7", "zeta", "alpha"}) {
			t.Errorf("q walks %q, want 7, zeta, alpha", keys)
		}
		if inner, _ := q.Get("alpha"); !value.IsObject(inner) {
			t.Errorf("q.alpha read back as %T", inner)
		} else if _, isMap := inner.(map[string]any); !isMap {
			t.Errorf("q.alpha, in Keys order, read back as %T, not a map", inner)
		}
	}
	old := []byte(`{"runId":"r","status":"running","generation":1,"context":{"input":null,"data":null,"event":null,"results":{},"visits":{}},` +
		`"pending":null,"work":{"activation":"a","values":{"n":{"a":2,"b":1}},"running":{}},"seq":0,` +
		`"control":{"active":["/states/a"],"history":{},"timers":[],"serial":0,"time":0}}`)
	st, err := Decode(old)
	if err != nil {
		t.Fatal(err)
	}
	if st.Work.Ordered != nil {
		t.Errorf("a state stored without ordered values reads back with %v", st.Work.Ordered)
	}
	if again, err := Encode(st); err != nil || !bytes.Equal(again, old) {
		t.Errorf("a state stored before encodes as\n%s\nnot\n%s (%v)", again, old, err)
	}
}

// A query node that builds an object at run time ($map) and leaves the
// empty marker in it keeps it while a node still reads it: the record
// holds the object's JSON in Work.Ordered (the member left out) and, in
// Work.Marked, the object with null where the marker stands, its pointer
// in Work.NotJSON. Read back, the state steps as the state kept in
// memory does: the node reading it after the task answered finds the
// member ($exists is true, as in the reference, where the JSON alone has
// no member).
func TestMarkedValueCrossesTheRecord(t *testing.T) {
	t.Parallel()
	wf := compile(t, `{"$workflow":"0.2","revision":"p/1","initial":"s","states":{"s":{"work":{"dag":{"$dag":"0.1","nodes":{
	"in":{"kind":"input"},
	"q":{"kind":"query","query":{"$map":[["zeta",1],["due",{"$date-add":["2026-01-01","$.delay"]}],["a~/b",[{"$date-add":["2026-01-01","$.delay"]},2]]]}},
	"t":{"kind":"task","run":"ok","version":"1"},"r":{"kind":"query","query":{"$seq":[{"$exists":"$.q.due"},{"$count":"$.q.*"}]}},"out":{"kind":"output"}},
	"edges":[{"from":"in","to":"q"},{"from":"in","to":"t"},{"from":"q","to":"r","port":"q"},{"from":"t","to":"r","port":"t"},
	{"from":"r","to":"out"}]}},"then":"done"},"done":{"final":true}}}`)
	st, eff, err := Apply(wf, nil, Message{Kind: KindStart, RunID: "r", Input: map[string]any{"n": 1.0}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encode(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"ordered":{"q":{"zeta":1,"a~/b":[null,2]}}`,
		`"marked":{"q":{"zeta":1,"due":null,"a~/b":[null,2]}}`,
		`"notJSON":{"marked":{"q":{"at":["/due","/a~0~1b/0"]}}}`,
	} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("record %s lacks %s", b, want)
		}
	}
	back, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := Encode(back); err != nil || !bytes.Equal(again, b) {
		t.Fatalf("read back and encoded again\n%s\nnot\n%s (%v)", again, b, err)
	}
	var inv *Invoke
	for _, e := range eff {
		if e.Invoke != nil {
			inv = e.Invoke
		}
	}
	res := Message{Kind: KindResult, Time: 2, Result: &TaskResult{Activation: inv.Activation, Node: inv.Node, Attempt: 1, Output: 6.0}}
	kept, _, err := Apply(wf, st, res, Options{})
	if err != nil {
		t.Fatal(err)
	}
	read, _, err := Apply(wf, back, res, Options{})
	if err != nil {
		t.Fatal(err)
	}
	keptB, _ := Encode(kept)
	readB, _ := Encode(read)
	if !bytes.Equal(keptB, readB) {
		t.Errorf("the state read back stepped to\n%s\nthe state kept in memory to\n%s", readB, keptB)
	}
	if want := `"/states/s":[true,3]`; !bytes.Contains(readB, []byte(want)) {
		t.Errorf("result %s lacks %s", readB, want)
	}
}

// A retried attempt's argument is computed again from the stored state:
// a with that reads a value holding the marker gives the retry what it
// gave the first attempt ($exists of the marker's member is true).
func TestRetryReadsMarkedValues(t *testing.T) {
	t.Parallel()
	wf := compile(t, `{"$workflow":"0.2","revision":"p/1","initial":"s","states":{"s":{"work":{"dag":{"$dag":"0.1","nodes":{
	"in":{"kind":"input"},
	"q":{"kind":"query","query":{"$map":[["zeta",1],["due",{"$date-add":["2026-01-01","$.delay"]}]]}},
	"t":{"kind":"task","run":"ok","version":"1","with":{"due":{"$exists":"$.q.due"}}},"out":{"kind":"output"}},
	"edges":[{"from":"in","to":"q"},{"from":"q","to":"t","port":"q"},{"from":"in","to":"t","port":"in"},{"from":"t","to":"out"}]}},"then":"done"},"done":{"final":true}}}`)
	opts := Options{Retry: func(string, string) RetryPolicy { return RetryPolicy{MaxAttempts: 2, InitialIntervalMs: 100} }}
	st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r", Input: map[string]any{"n": 1.0}, Time: 1}, opts)
	first := only(t, eff, invokeOf)
	st, eff = step(t, wf, roundTrip(t, st), answer(first, failed("flaky")), opts)
	arm := only(t, eff, armOf)
	_, eff = step(t, wf, roundTrip(t, st), Message{Kind: KindTimer, Time: arm.Deadline, Timer: &TimerFire{ID: arm.ID, Deadline: arm.Deadline}}, opts)
	retry := only(t, eff, invokeOf)
	if want := map[string]any{"due": true}; !reflect.DeepEqual(first.With, want) || !reflect.DeepEqual(retry.With, want) {
		t.Errorf("with of attempt 1 %v, of attempt %d %v; want %v for both", first.With, retry.Attempt, retry.With, want)
	}
}
