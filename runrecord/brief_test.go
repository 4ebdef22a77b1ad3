package runrecord

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// jsonBrief is StateBrief as encoding/json reads the same members.
type jsonBrief struct {
	RunID   string `json:"runId"`
	Status  string `json:"status"`
	Control struct {
		Active []string `json:"active"`
	} `json:"control"`
	Context struct {
		Input   json.RawMessage `json:"input"`
		Data    json.RawMessage `json:"data"`
		Results json.RawMessage `json:"results"`
		Visits  json.RawMessage `json:"visits"`
	} `json:"context"`
}

// agrees reports whether b is what encoding/json reads of state.
func agrees(state []byte, b StateBrief) bool {
	var j jsonBrief
	if json.Unmarshal(state, &j) != nil {
		return false
	}
	isObject := func(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '{' }
	return j.RunID == b.RunID && j.Status == b.Status && slices.Equal(j.Control.Active, b.Active) &&
		bytes.Equal(j.Context.Input, b.Input) && bytes.Equal(j.Context.Data, b.Data) &&
		isObject(j.Context.Results) == b.Results && isObject(j.Context.Visits) == b.Visits
}

func TestReadStateBrief(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, state string
		ok          bool
	}{
		{"as written", `{"workflow":"w","revision":"w/1","runId":"r1","status":"waiting","generation":1,"context":{"input":{"a":[1,2]},"data":null,"event":null,"results":{},"visits":{"/s":1}},"pending":null,"seq":1,"control":{"active":["/s","/t"],"history":{},"timers":[],"serial":0,"time":5}}`, true},
		{"members in another order, spaces", ` { "control" : {"time":5, "active" : ["/s"]}, "context":{"visits":{},"results":{"x":{}}}, "status":"done", "runId":"r1" } `, true},
		{"a later duplicate wins", `{"runId":"r0","runId":"r1","status":"done","context":{"results":{},"visits":{}},"control":{"active":["/a"],"active":["/s"]}}`, true},
		{"null results", `{"runId":"r1","status":"done","context":{"results":null,"visits":{}},"control":{"active":["/s"]}}`, true},
		{"escaped key", `{"run\u0049d":"r1","status":"done","context":{},"control":{"active":["/s"]}}`, false},
		{"a key in another case", `{"runId":"r1","Status":"done","context":{},"control":{"active":["/s"]}}`, false},
		{"a nested key in another case", `{"runId":"r1","status":"done","context":{"Input":1},"control":{"active":["/s"]}}`, false},
		{"non-ASCII state", `{"runId":"r1","status":"done","context":{},"control":{"active":["/é"]}}`, false},
		{"status not a string", `{"runId":"r1","status":3,"context":{},"control":{"active":["/s"]}}`, false},
		{"trailing bytes", `{"runId":"r1","status":"done"}x`, false},
		{"broken", `{"runId":"r1","status":`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, ok := ReadStateBrief([]byte(tc.state))
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v (%+v)", ok, tc.ok, b)
			}
			if ok && !agrees([]byte(tc.state), b) {
				t.Errorf("read %+v, which encoding/json does not", b)
			}
		})
	}
}

// FuzzReadStateBrief: whatever ReadStateBrief reads, encoding/json reads
// the same.
func FuzzReadStateBrief(f *testing.F) {
	f.Add([]byte(`{"runId":"r1","status":"waiting","context":{"input":{"a":[1,2]},"data":null,"results":{},"visits":{"/s":1}},"control":{"active":["/s","/t"]}}`))
	f.Add([]byte(`{"runId":"r1","status":"done","context":{"results":null},"control":{"active":[]}}`))
	f.Fuzz(func(t *testing.T, state []byte) {
		if b, ok := ReadStateBrief(state); ok && !agrees(state, b) {
			t.Errorf("read %+v from %q, which encoding/json does not", b, state)
		}
	})
}
