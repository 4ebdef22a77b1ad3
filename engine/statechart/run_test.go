package statechart

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// play runs a script of operations: "start@T", "step:EV@T" ("@T" optional),
// "adv@T" or "one@T" (advance with One). It returns a trace line per
// operation: the active leaves, fired transitions and time, or the code.
func play(t *testing.T, c *Chart, script string) []string {
	t.Helper()
	var state State
	var trace []string
	for _, op := range strings.Fields(script) {
		name, at, hasAt := strings.Cut(op, "@")
		now := 0.0
		if hasAt {
			var err error
			if now, err = strconv.ParseFloat(at, 64); err != nil {
				t.Fatalf("bad time in %q", op)
			}
		}
		var r Result
		var err error
		switch {
		case name == "start":
			r, err = c.Start(StartOptions{Now: now})
		case strings.HasPrefix(name, "step:"):
			o := StepOptions{}
			if hasAt {
				o.Now = &now
			}
			r, err = c.Step(state, strings.TrimPrefix(name, "step:"), o)
		case name == "adv", name == "one":
			r, err = c.Advance(state, now, AdvanceOptions{One: name == "one"})
		default:
			t.Fatalf("bad op %q", op)
		}
		if err != nil {
			trace = append(trace, string(fault.CodeOf(err)))
			continue
		}
		state = r.State
		line := strings.Join(r.State.Active, ",") + " " + value.MustCanonical(intsValue(r.Transitions)) +
			" t=" + value.NumberString(r.State.Time)
		if r.Final {
			line += " final"
		}
		trace = append(trace, line)
	}
	return trace
}

func intsValue(xs []int) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

func TestRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, chart, script string
		want                []string
	}{
		{
			"document order decides, wildcard first",
			`{"$fsm":"0.2","initial":"a","states":["a","b","c"],"transitions":[{"from":"a","to":"b"},{"from":"a","event":"x","to":"c"}]}`,
			"start step:x",
			[]string{"a [] t=0", "b [0] t=0"},
		},
		{
			"wildcards ignore timers and completion",
			`{"$fsm":"0.2","initial":"a","states":["a","b","c"],"transitions":[{"from":"a","after":5,"to":"c"},{"from":"b","to":"a"},{"from":"a","event":"go","to":"b"}]}`,
			"start adv@5",
			[]string{"a [] t=0", "c [0] t=5"},
		},
		{
			"leaf transitions before ancestors",
			`{"$fsm":"0.2","initial":"p","states":[{"id":"p","initial":"a"},{"id":"a","parent":"p"},{"id":"b","parent":"p"},"q"],"transitions":[{"from":"p","event":"x","to":"q"},{"from":"a","event":"x","to":"b"}]}`,
			"start step:x step:x",
			[]string{"a [] t=0", "b [1] t=0", "q [0] t=0"},
		},
		{
			"done fires after the final child is entered",
			`{"$fsm":"0.2","initial":"p","states":[{"id":"p","initial":"a"},{"id":"a","parent":"p"},{"id":"f","parent":"p","final":true},{"id":"z","final":true}],"transitions":[{"from":"a","event":"go","to":"f"},{"from":"p","done":true,"to":"z"}]}`,
			"start step:go",
			[]string{"a [] t=0", "z [0,1] t=0 final"},
		},
		{
			"always stabilizes after start",
			`{"$fsm":"0.2","initial":"a","states":["a","b"],"transitions":[{"from":"a","always":true,"to":"b"}]}`,
			"start",
			[]string{"b [0] t=0"},
		},
		{
			"always loop hits the microstep limit",
			`{"$fsm":"0.2","initial":"a","states":["a","b"],"transitions":[{"from":"a","always":true,"to":"b"},{"from":"b","always":true,"to":"a"}]}`,
			"start",
			[]string{"JF2012"},
		},
		{
			"time cannot move backwards",
			`{"$fsm":"0.2","initial":"a","states":["a"],"transitions":[]}`,
			"start@10 step:x@9 adv@9 step:x adv@11",
			[]string{"a [] t=10", "JF2011", "JF2011", "a [] t=10", "a [] t=11"},
		},
		{
			"step never fires an overdue timer",
			`{"$fsm":"0.2","initial":"a","states":["a","b"],"transitions":[{"from":"a","after":10,"to":"b"}]}`,
			"start step:x@50 adv@50",
			[]string{"a [] t=0", "a [] t=50", "b [0] t=50"},
		},
		{
			"new delays count from the logical firing time",
			`{"$fsm":"0.2","initial":"a","states":["a","b","c"],"transitions":[{"from":"a","after":10,"to":"b"},{"from":"b","after":10,"to":"c"}]}`,
			"start one@100 one@100 one@100",
			[]string{"a [] t=0", "b [0] t=10", "c [1] t=20", "c [] t=100"},
		},
		{
			"exit cancels the source's timers",
			`{"$fsm":"0.2","initial":"a","states":["a","b"],"transitions":[{"from":"a","after":10,"to":"b"},{"from":"a","event":"x","to":"a"}]}`,
			"start step:x@5 adv@10 adv@15",
			[]string{"a [] t=0", "a [1] t=5", "a [] t=10", "b [0] t=15"},
		},
		{
			"internal self-transition keeps timers",
			`{"$fsm":"0.2","initial":"a","states":["a","b"],"transitions":[{"from":"a","after":10,"to":"b"},{"from":"a","event":"x","to":"a","type":"internal"}]}`,
			"start step:x@5 adv@10",
			[]string{"a [] t=0", "a [1] t=5", "b [0] t=10"},
		},
		{
			"parallel regions step together",
			`{"$fsm":"0.2","initial":"p","states":[{"id":"p","type":"parallel"},{"id":"r","parent":"p","initial":"r1"},{"id":"r1","parent":"r"},{"id":"r2","parent":"r"},{"id":"s","parent":"p","initial":"s1"},{"id":"s1","parent":"s"},{"id":"s2","parent":"s"}],"transitions":[{"from":"s1","event":"x","to":"s2"},{"from":"r1","event":"x","to":"r2"}]}`,
			"start step:x",
			[]string{"r1,s1 [] t=0", "r2,s2 [0,1] t=0"},
		},
		{
			"deep history restores leaves",
			`{"$fsm":"0.2","initial":"p","states":[{"id":"p","initial":"a"},{"id":"a","parent":"p","initial":"a1"},{"id":"a1","parent":"a"},{"id":"a2","parent":"a"},{"id":"h","parent":"p","history":"deep"},"off"],"transitions":[{"from":"a1","event":"n","to":"a2"},{"from":"p","event":"off","to":"off"},{"from":"off","event":"on","to":"h"},{"from":"off","event":"reset","to":"p"}]}`,
			"start step:n step:off step:on step:off step:reset",
			[]string{"a1 [] t=0", "a2 [0] t=0", "off [1] t=0", "a2 [2] t=0", "off [1] t=0", "a1 [3] t=0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := play(t, mustCompile(t, tt.chart), tt.script)
			if strings.Join(got, " | ") != strings.Join(tt.want, " | ") {
				t.Errorf("\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestNonFiniteTimes(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, `{"$fsm":"0.2","initial":"a","states":["a","b"],"transitions":[{"from":"a","after":1e308,"to":"b"}]}`)
	for _, now := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := c.Start(StartOptions{Now: now}); fault.CodeOf(err) != fault.JF2011 {
			t.Errorf("start at %v: %v", now, err)
		}
	}
	if _, err := c.Start(StartOptions{Now: 1e308}); fault.CodeOf(err) != fault.JF2011 {
		t.Errorf("overflowing deadline: %v", err)
	}
	r, err := c.Start(StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nan := math.NaN()
	if _, err := c.Step(r.State, "x", StepOptions{Now: &nan}); fault.CodeOf(err) != fault.JF2011 {
		t.Errorf("step at NaN: %v", err)
	}
	if _, err := c.Advance(r.State, math.Inf(1), AdvanceOptions{}); fault.CodeOf(err) != fault.JF2011 {
		t.Errorf("advance to Infinity: %v", err)
	}
}

func TestResultsAreIndependent(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, `{"$fsm":"0.2","initial":"p","states":[{"id":"p","initial":"a"},{"id":"a","parent":"p"},{"id":"b","parent":"p"},{"id":"h","parent":"p","history":"shallow"},"q"],
		"transitions":[{"from":"a","after":10,"to":"b"},{"from":"b","event":"out","to":"q"},{"from":"q","event":"back","to":"h"}]}`)
	s, err := c.Restore(doc(t, `{"active":["a"],"history":{"h":["b"]},"timers":[{"transition":0,"at":10,"token":1,"x":{"y":1}}],"serial":1,"time":0,"extra":[1]}`))
	if err != nil {
		t.Fatal(err)
	}
	before := value.MustCanonical(s.ToValue())
	r, err := c.Advance(s, 10, AdvanceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := c.Step(r.State, "out", StepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Scribble over every result; the input snapshot must not change.
	for _, res := range []*Result{&r, &r2} {
		res.State.Active[0] = "zz"
		for k := range res.State.History {
			res.State.History[k][0] = "zz"
		}
		res.State.Extra["extra"].([]any)[0] = 99.0
	}
	if after := value.MustCanonical(s.ToValue()); after != before {
		t.Errorf("input snapshot changed:\n%s\n%s", before, after)
	}
	if s.Timers[0].Extra["x"].(map[string]any)["y"] != 1.0 {
		t.Error("timer extra changed")
	}
}

func TestValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		v    interface{ ToValue() any }
		want string
	}{
		{"effect", Effect{Run: "x"}, `{"run":"x"}`},
		{"effect with null", Effect{Run: "x", HasWith: true}, `{"run":"x","with":null}`},
		{"record", Record{Code: fault.JF2003, DocPath: "/transitions/0/guard", Message: "m"}, `{"code":"JF2003","docPath":"/transitions/0/guard","message":"m"}`},
		{"empty state", State{Active: []string{"a"}}, `{"active":["a"],"history":{},"serial":0,"time":0,"timers":[]}`},
		{"empty result", Result{State: State{Active: []string{"a"}}}, `{"changed":false,"effects":[],"entered":[],"errors":[],"exited":[],"final":false,"state":{"active":["a"],"history":{},"serial":0,"time":0,"timers":[]},"transitions":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := value.MustCanonical(tt.v.ToValue()); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestFinalAndEvents(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, `{"$fsm":"0.2","initial":"a","states":["a",{"id":"f","final":true}],"transitions":[
		{"from":"a","event":"x","to":"f"},{"from":"a","event":"y","to":"f"},{"from":"a","event":"x","to":"a"},{"from":"a","to":"a"}]}`)
	if c.Final(State{Active: []string{"a"}}) || !c.Final(State{Active: []string{"f"}}) || c.Final(State{Active: []string{"nope"}}) {
		t.Error("Final disagrees")
	}
	ev, err := c.Events(State{Active: []string{"a"}})
	if err != nil || strings.Join(ev, ",") != "x,y" {
		t.Errorf("Events = %q, %v", ev, err)
	}
	if _, err := c.Events(State{Active: []string{"nope"}}); fault.CodeOf(err) != fault.JF2010 {
		t.Errorf("Events on a bad snapshot: %v", err)
	}
}

// TestConcurrentUse drives one chart from many goroutines; run with -race.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, `{"$fsm":"0.2","initial":"a","states":["a","b"],"transitions":[
		{"from":"a","event":"go","to":"b"},{"from":"b","after":5,"to":"a"}]}`)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Start(StartOptions{Now: float64(g)})
			for i := 0; err == nil && i < 200; i++ {
				if r, err = c.Step(r.State, "go", StepOptions{}); err == nil {
					r, err = c.Advance(r.State, r.State.Time+5, AdvanceOptions{})
				}
			}
			if err != nil || r.State.Active[0] != "a" || r.State.Serial != 200 {
				t.Errorf("goroutine %d: %v %v", g, err, r.State)
			}
		}()
	}
	wg.Wait()
}
