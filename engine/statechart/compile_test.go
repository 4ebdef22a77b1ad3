package statechart

import (
	"errors"
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// doc decodes a JSON literal for tests.
func doc(t testing.TB, s string) any {
	t.Helper()
	v, err := value.Decode([]byte(s), value.Limits{})
	if err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return v
}

func mustCompile(t testing.TB, s string) *Chart {
	t.Helper()
	c, err := Compile(doc(t, s))
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return c
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	const head = `"$fsm":"0.2","initial":"a",`
	tests := []struct {
		name, doc string
		code      fault.Code
		path      string
		reason    string
	}{
		{"not an object", `"x"`, fault.JF0020, "/$fsm", `a statechart requires "$fsm": "0.2"`},
		{"wrong version", `{"$fsm":"0.3","initial":"a","states":["a"],"transitions":[]}`, fault.JF0020, "/$fsm", `a statechart requires "$fsm": "0.2"`},
		{"unknown member", `{` + head + `"states":["a"],"transitions":[],"x/y":1}`, fault.JF0020, "/x/y", "unknown statechart member"},
		{"index key first", `{` + head + `"states":["a"],"transitions":[],"b":1,"10":2,"9":3}`, fault.JF0020, "/9", "unknown statechart member"},
		{"empty states", `{` + head + `"states":[],"transitions":[]}`, fault.JF0020, "/states", "states must be a non-empty array"},
		{"bad state", `{` + head + `"states":["a",null],"transitions":[]}`, fault.JF0020, "/states/1", "a state needs a non-empty string id"},
		{"unknown state member", `{` + head + `"states":[{"id":"a","on":1}],"transitions":[]}`, fault.JF0020, "/states/0/on", "unknown state member"},
		{"duplicate", `{` + head + `"states":["a","a"],"transitions":[]}`, fault.JF0020, "/states/1", "duplicate state 'a'"},
		{"parent type", `{` + head + `"states":["a",{"id":"b","parent":1}],"transitions":[]}`, fault.JF0020, "/states/1/parent", "parent must be a state id"},
		{"state initial type", `{` + head + `"states":[{"id":"a","initial":null}],"transitions":[]}`, fault.JF0020, "/states/0/initial", "initial must be a state id"},
		{"state type", `{` + head + `"states":[{"id":"a","type":"choice"}],"transitions":[]}`, fault.JF0020, "/states/0/type", "unknown state type"},
		{"history mode", `{` + head + `"states":[{"id":"a","history":true}],"transitions":[]}`, fault.JF0020, "/states/0/history", "history must be shallow or deep"},
		{"final type", `{` + head + `"states":[{"id":"a","final":1}],"transitions":[]}`, fault.JF0020, "/states/0/final", "final must be boolean"},
		{"conflict", `{` + head + `"states":[{"id":"a","final":true,"type":"compound"}],"transitions":[]}`, fault.JF0020, "/states/0", "conflicting state types"},
		{"undeclared parent", `{` + head + `"states":["a",{"id":"b","parent":"c"}],"transitions":[]}`, fault.JF0020, "/states/1/parent", "parent is undeclared"},
		{"cycle", `{` + head + `"states":["a",{"id":"b","parent":"c"},{"id":"c","parent":"b"}],"transitions":[]}`, fault.JF0020, "/states/1/parent", "state hierarchy has a cycle"},
		{"final children", `{` + head + `"states":[{"id":"a","type":"final"},{"id":"b","parent":"a"}],"transitions":[]}`, fault.JF0020, "/states/0", "final states cannot have children"},
		{"compound initial", `{` + head + `"states":["a",{"id":"b","parent":"a"}],"transitions":[]}`, fault.JF0020, "/states/0/initial", "a compound state needs an initial naming an immediate ordinary child"},
		{"parallel regions", `{` + head + `"states":[{"id":"a","type":"parallel"}],"transitions":[]}`, fault.JF0020, "/states/0", "a parallel state needs regions"},
		{"atomic initial", `{` + head + `"states":[{"id":"a","initial":"a"}],"transitions":[]}`, fault.JF0020, "/states/0/initial", "only compound states have initial"},
		{"history root", `{` + head + `"states":["a",{"id":"h","type":"history","history":"deep"}],"transitions":[]}`, fault.JF0020, "/states/1", "history needs a parent and a mode, and cannot carry effects"},
		{"doc initial", `{"$fsm":"0.2","initial":"b","states":["a"],"transitions":[]}`, fault.JF0020, "/initial", "initial must name an ordinary root state"},
		{"transitions", `{` + head + `"states":["a"],"transitions":null}`, fault.JF0020, "/transitions", "transitions must be an array"},
		{"endpoints", `{` + head + `"states":["a"],"transitions":[{"from":"a","to":"b"}]}`, fault.JF0020, "/transitions/0", "transition from/to must name declared states"},
		{"transition member", `{` + head + `"states":["a"],"transitions":[{"from":"a","to":"a","x":1}]}`, fault.JF0020, "/transitions/0/x", "unknown transition member"},
		{"from final", `{` + head + `"states":["a",{"id":"f","final":true}],"transitions":[{"from":"f","to":"a"}]}`, fault.JF0020, "/transitions/0/from", "history and final states cannot have outgoing transitions"},
		{"event type", `{` + head + `"states":["a"],"transitions":[{"from":"a","to":"a","event":true}]}`, fault.JF0020, "/transitions/0/event", "event must be a string or null"},
		{"after", `{` + head + `"states":["a"],"transitions":[{"from":"a","to":"a","after":-0.5}]}`, fault.JF0020, "/transitions/0/after", "after must be a finite nonnegative millisecond duration"},
		{"done", `{` + head + `"states":["a"],"transitions":[{"from":"a","to":"a","done":null}]}`, fault.JF0020, "/transitions/0/done", "done must be true when present"},
		{"always", `{` + head + `"states":["a"],"transitions":[{"from":"a","to":"a","always":false}]}`, fault.JF0020, "/transitions/0/always", "always must be true when present"},
		{"triggers", `{` + head + `"states":["a"],"transitions":[{"from":"a","to":"a","after":1,"always":true}]}`, fault.JF0020, "/transitions/0", "a transition has exactly one trigger"},
		{"done source", `{` + head + `"states":["a"],"transitions":[{"from":"a","to":"a","done":true}]}`, fault.JF0020, "/transitions/0/done", "done requires a compound or parallel source"},
		{"type", `{` + head + `"states":["a"],"transitions":[{"from":"a","to":"a","type":1}]}`, fault.JF0020, "/transitions/0/type", "internal transitions must target their source or a descendant"},
		{"guard", `{` + head + `"states":["a"],"transitions":[{"from":"a","to":"a","guard":{"$nope":1}}]}`, fault.JF0007, "/transitions/0/guard", "statechart guard failed to compile"},
		{"effects list", `{` + head + `"states":[{"id":"a","exit":{}}],"transitions":[]}`, fault.JF0008, "/states/0/exit", "an effects list must be an array of { run, with? } descriptors"},
		{"effect", `{` + head + `"states":["a"],"transitions":[{"from":"a","to":"a","effects":[{"run":1}]}]}`, fault.JF0008, "/transitions/0/effects/0", `an effect descriptor must be an object with a non-empty string "run"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(doc(t, tt.doc))
			var fe *fault.Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %v, want %s", err, tt.code)
			}
			if fe.Code != tt.code || fe.Path != tt.path || !fe.HasPath || fe.Reason != tt.reason {
				t.Errorf("got %s %q at %q, want %s %q at %q", fe.Code, fe.Reason, fe.Path, tt.code, tt.reason, tt.path)
			}
			if tt.code == fault.JF0007 && fe.Cause == nil {
				t.Error("JF0007 lost its query cause")
			}
		})
	}
}

func TestCompileTreeOrder(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, `{"$fsm":"0.2","initial":"r","states":[
		{"id":"c2","parent":"r"},"z",{"id":"r","initial":"c1"},{"id":"g","parent":"c1"},
		{"id":"c1","parent":"r","initial":"g"},{"id":"h","parent":"r","history":"deep"}],"transitions":[]}`)
	got := value.MustCanonical(stringsValue(c.States()))
	if want := `["z","r","c2","c1","g","h"]`; got != want {
		t.Errorf("States() = %s, want %s", got, want)
	}
}

func TestCompileOptions(t *testing.T) {
	t.Parallel()
	d := doc(t, `{"$fsm":"0.2","initial":"a","states":["a","b"],"transitions":[
		{"from":"a","always":true,"to":"b"},{"from":"b","always":true,"to":"a"}]}`)
	if _, err := CompileWith(d, Options{MaxMicrosteps: -1}); err == nil || fault.CodeOf(err) != "" {
		t.Errorf("negative limit: %v, want a plain error", err)
	}
	for _, tt := range []struct {
		limit int
		want  fault.Code
	}{{0, fault.JF2012}, {7, fault.JF2012}} {
		c, err := CompileWith(d, Options{MaxMicrosteps: tt.limit})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Start(StartOptions{}); fault.CodeOf(err) != tt.want {
			t.Errorf("limit %d: %v, want %s", tt.limit, err, tt.want)
		}
	}
}

func TestCompileDeepChainIsLinear(t *testing.T) {
	t.Parallel()
	// A long parent chain must compile quickly and keep its tree order.
	const n = 20000
	states := make([]any, n)
	states[0] = map[string]any{"id": "s0", "initial": "s1"}
	for i := 1; i < n; i++ {
		s := map[string]any{"id": "s" + value.NumberString(float64(i)), "parent": "s" + value.NumberString(float64(i-1))}
		if i < n-1 {
			s["initial"] = "s" + value.NumberString(float64(i+1))
		}
		states[i] = s
	}
	c, err := Compile(map[string]any{"$fsm": "0.2", "initial": "s0", "states": states, "transitions": []any{}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Start(StartOptions{})
	if err != nil || len(r.Entered) != n || r.State.Active[0] != "s19999" {
		t.Fatalf("start: %v, %d entered", err, len(r.Entered))
	}
}
