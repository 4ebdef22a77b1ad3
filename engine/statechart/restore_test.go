package statechart

import (
	"errors"
	"math"
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// restoreChart has compound, parallel, history and delayed transitions.
const restoreChart = `{"$fsm":"0.2","initial":"w","states":[
	{"id":"w","initial":"e"},{"id":"e","parent":"w"},{"id":"r","parent":"w","initial":"r1"},
	{"id":"r1","parent":"r"},{"id":"r2","parent":"r"},
	{"id":"hs","parent":"w","history":"shallow"},{"id":"hd","parent":"w","history":"deep"},
	{"id":"p","type":"parallel"},{"id":"x","parent":"p"},{"id":"y","parent":"p"},{"id":"ph","parent":"p","history":"shallow"},
	"off"],"transitions":[
	{"from":"e","after":10,"to":"r"},{"from":"w","after":100,"to":"off"},{"from":"off","event":"s","to":"hs"},
	{"from":"off","event":"d","to":"hd"},{"from":"x","after":5,"to":"off"},{"from":"off","event":"p","to":"ph"}]}`

func TestRestoreTypedState(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, restoreChart)
	ok := func() State {
		return State{Active: []string{"e"}, Timers: []Timer{{Transition: 1, At: 100, Token: 1}, {Transition: 0, At: 10, Token: 2}}, Serial: 2}
	}
	tests := []struct {
		name   string
		edit   func(*State)
		reason string
	}{
		{"valid", func(*State) {}, ""},
		{"no leaves", func(s *State) { s.Active = nil }, "invalid statechart snapshot"},
		{"compound leaf", func(s *State) { s.Active = []string{"r"} }, "invalid statechart snapshot"},
		{"two children", func(s *State) { s.Active = []string{"e", "r1"} }, "invalid statechart snapshot"},
		{"two roots", func(s *State) { s.Active = []string{"e", "off"} }, "invalid statechart snapshot"},
		{"missing region", func(s *State) { s.Active = []string{"x"}; s.Timers = nil }, "invalid statechart snapshot"},
		{"negative serial", func(s *State) { s.Serial = -1 }, "invalid statechart snapshot"},
		{"unsafe serial", func(s *State) { s.Serial = maxSafe + 1 }, "invalid statechart snapshot"},
		{"NaN time", func(s *State) { s.Time = math.NaN() }, "invalid statechart snapshot"},
		{"history key", func(s *State) { s.History = map[string][]string{"w": {"e"}} }, "invalid history record"},
		{"empty history", func(s *State) { s.History = map[string][]string{"hd": {}} }, "invalid history record"},
		{"duplicate history", func(s *State) { s.History = map[string][]string{"hd": {"e", "e"}} }, "invalid history record"},
		{"deep not a leaf", func(s *State) { s.History = map[string][]string{"hd": {"r"}} }, "illegal deep history configuration"},
		{"deep outside", func(s *State) { s.History = map[string][]string{"hd": {"off"}} }, "illegal deep history configuration"},
		{"shallow grandchild", func(s *State) { s.History = map[string][]string{"hs": {"r1"}} }, "illegal shallow history configuration"},
		{"shallow history child", func(s *State) { s.History = map[string][]string{"hs": {"hd"}} }, "illegal shallow history configuration"},
		{"shallow parallel partial", func(s *State) { s.History = map[string][]string{"ph": {"x"}} }, "illegal shallow history configuration"},
		{"history before timers", func(s *State) {
			s.History = map[string][]string{"hd": {"off"}}
			s.Timers[0].Token = 0
		}, "illegal deep history configuration"},
		{"timer index", func(s *State) { s.Timers[0].Transition = 6 }, "invalid timer record"},
		{"timer negative index", func(s *State) { s.Timers[0].Transition = -1 }, "invalid timer record"},
		{"timer not delayed", func(s *State) { s.Timers[0].Transition = 2 }, "invalid timer record"},
		{"timer inactive source", func(s *State) { s.Timers[0].Transition = 4 }, "invalid timer record"},
		{"timer deadline", func(s *State) { s.Timers[0].At = math.Inf(1) }, "invalid timer record"},
		{"timer token zero", func(s *State) { s.Timers[0].Token = 0 }, "invalid timer record"},
		{"timer token above serial", func(s *State) { s.Timers[0].Token = 3 }, "invalid timer record"},
		{"timer token twice", func(s *State) { s.Timers[1].Token = 1 }, "invalid timer record"},
		{"timer twice", func(s *State) { s.Timers[1].Transition = 1 }, "invalid timer record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := ok()
			tt.edit(&s)
			got, err := c.Restore(s)
			if tt.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				// Normalized: timers by deadline.
				if got.Timers[0].Transition != 0 || got.Timers[1].Transition != 1 {
					t.Errorf("timers not sorted: %+v", got.Timers)
				}
				return
			}
			var fe *fault.Error
			if !errors.As(err, &fe) || fe.Code != fault.JF2010 || fe.Reason != tt.reason || fe.HasPath {
				t.Errorf("got %v, want JF2010 %q", err, tt.reason)
			}
			// Step and Advance validate the same way.
			if _, err := c.Step(s, "x", StepOptions{}); fault.CodeOf(err) != fault.JF2010 {
				t.Errorf("Step: %v", err)
			}
			if _, err := c.Advance(s, 1e6, AdvanceOptions{}); fault.CodeOf(err) != fault.JF2010 && !math.IsNaN(s.Time) {
				t.Errorf("Advance: %v", err)
			}
		})
	}
}

func TestRestoreJSON(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, restoreChart)
	tests := []struct{ name, snapshot, want string }{
		{
			"normalizes", `{"active":["y","x"],"history":{"hd":["r2"],"ph":["y","x"]},"timers":[],"serial":-0,"time":-0}`,
			`{"active":["x","y"],"history":{"hd":["r2"],"ph":["x","y"]},"serial":0,"time":0,"timers":[]}`,
		},
		{
			"keeps unknown members", `{"active":["e"],"history":{},"timers":[{"transition":0,"at":1,"token":1,"why":"x"}],"serial":1,"time":0,"z":{"a":1}}`,
			`{"active":["e"],"history":{},"serial":1,"time":0,"timers":[{"at":1,"token":1,"transition":0,"why":"x"}],"z":{"a":1}}`,
		},
		{"not an object", `[]`, "JF2010: invalid statechart snapshot"},
		{"leaf not a string", `{"active":[1],"history":{},"timers":[],"serial":0,"time":0}`, "JF2010: invalid statechart snapshot"},
		{"history not an object", `{"active":["e"],"history":[],"timers":[],"serial":0,"time":0}`, "JF2010: invalid statechart snapshot"},
		{"serial fraction", `{"active":["e"],"history":{},"timers":[],"serial":0.5,"time":0}`, "JF2010: invalid statechart snapshot"},
		{"bad active before bad history", `{"active":["zz"],"history":{"hd":[]},"timers":[],"serial":0,"time":0}`, "JF2010: invalid statechart snapshot"},
		{"history value not a list", `{"active":["e"],"history":{"hd":"r1"},"timers":[],"serial":0,"time":0}`, "JF2010: invalid history record"},
		{"history equal numbers", `{"active":["e"],"history":{"hd":[1,1.0]},"timers":[],"serial":0,"time":0}`, "JF2010: invalid history record"},
		{"history distinct objects", `{"active":["e"],"history":{"hd":[{},{}]},"timers":[],"serial":0,"time":0}`, "JF2010: illegal deep history configuration"},
		{"shallow history number", `{"active":["e"],"history":{"hs":[1]},"timers":[],"serial":0,"time":0}`, "JF2010: illegal shallow history configuration"},
		// Go maps lose member order, so records are checked in canonical
		// order: what the reference does for a canonically stored snapshot.
		{"history in canonical key order", `{"active":["e"],"history":{"hs":["r1"],"hd":[]},"timers":[],"serial":0,"time":0}`, "JF2010: invalid history record"},
		{"timer not an object", `{"active":["e"],"history":{},"timers":[[0,1,1]],"serial":1,"time":0}`, "JF2010: invalid timer record"},
		{"timer index string", `{"active":["e"],"history":{},"timers":[{"transition":"0","at":1,"token":1}],"serial":1,"time":0}`, "JF2010: invalid timer record"},
		{"timer index fraction", `{"active":["e"],"history":{},"timers":[{"transition":0.5,"at":1,"token":1}],"serial":1,"time":0}`, "JF2010: invalid timer record"},
		{"timer token missing", `{"active":["e"],"history":{},"timers":[{"transition":0,"at":1}],"serial":1,"time":0}`, "JF2010: invalid timer record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := c.Restore(doc(t, tt.snapshot))
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				got = value.MustCanonical(s.ToValue())
			}
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	var nilState *State
	if _, err := c.Restore(nilState); fault.CodeOf(err) != fault.JF2010 {
		t.Errorf("nil *State: %v", err)
	}
}

// TestRestoreLargeLists exercises the map-based duplicate checks.
func TestRestoreLargeLists(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, restoreChart)
	list := make([]any, 40)
	for i := range list {
		list[i] = float64(i)
	}
	list[39] = math.Copysign(0, -1) // -0.0 is +0 in Go
	list[0] = 0.0
	snap := map[string]any{"active": []any{"e"}, "history": map[string]any{"hd": list}, "timers": []any{}, "serial": 0.0, "time": 0.0}
	if _, err := c.Restore(snap); err == nil || err.Error() != "JF2010: invalid history record" {
		t.Errorf("duplicate zero: %v", err)
	}
	ids := make([]string, 40)
	for i := range ids {
		ids[i] = "id" + value.NumberString(float64(i))
	}
	if distinct(append(ids, "id7")) || !distinct(ids) {
		t.Error("distinct disagrees on a long list")
	}
}
