package statechart

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// seedCharts adds every golden chart and a few hand-written ones.
func seedCharts(f *testing.F) {
	for _, cases := range loadGolden(f) {
		for _, gc := range cases {
			b, err := json.Marshal(gc.c["chart"])
			if err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte(restoreChart))
	f.Add([]byte(`{"$fsm":"0.2","initial":"a","states":["a"],"transitions":[{"from":"a","always":true,"to":"a","type":"internal"}]}`))
}

// checkFault fails unless err is nil or a coded fault.
func checkFault(t *testing.T, what string, err error) {
	var fe *fault.Error
	if err != nil && !errors.As(err, &fe) {
		t.Fatalf("%s: uncoded error %v", what, err)
	}
}

// FuzzCompile compiles arbitrary documents and drives whatever compiles
// through start, every declared event and a time advance.
func FuzzCompile(f *testing.F) {
	seedCharts(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := value.Decode(data, value.Limits{MaxBytes: 1 << 16, MaxDepth: 64})
		if err != nil {
			return
		}
		c, err := CompileWith(d, Options{MaxMicrosteps: 50})
		checkFault(t, "compile", err)
		if err != nil {
			return
		}
		r, err := c.Start(StartOptions{Now: 1})
		checkFault(t, "start", err)
		if err != nil {
			return
		}
		checkState(t, c, r.State)
		for i := range c.transitions {
			ev := c.transitions[i].event
			now := float64(i + 2)
			next, err := c.Step(r.State, ev, StepOptions{Now: &now, Payload: ev})
			checkFault(t, "step", err)
			if err == nil {
				checkState(t, c, next.State)
				r = next
			}
		}
		next, err := c.Advance(r.State, 1e9, AdvanceOptions{})
		checkFault(t, "advance", err)
		if err == nil {
			checkState(t, c, next.State)
		}
	})
}

// checkState requires every returned snapshot to restore to itself.
func checkState(t *testing.T, c *Chart, s State) {
	t.Helper()
	want := value.MustCanonical(s.ToValue())
	back, err := c.Restore(value.Clone(s.ToValue()))
	if err != nil {
		t.Fatalf("result %s does not restore: %v", want, err)
	}
	if got := value.MustCanonical(back.ToValue()); got != want {
		t.Fatalf("restore changed a result:\n%s\n%s", want, got)
	}
}

// FuzzRestore restores arbitrary snapshots into a chart with every kind
// of state; whatever restores must survive a step and an advance.
func FuzzRestore(f *testing.F) {
	f.Add([]byte(`{"active":["e"],"history":{},"timers":[{"transition":1,"at":100,"token":1}],"serial":1,"time":0}`))
	f.Add([]byte(`{"active":["x","y"],"history":{"hd":["r2"],"hs":["r"],"ph":["y","x"]},"timers":[{"transition":4,"at":5,"token":3}],"serial":3,"time":1,"k":[1]}`))
	f.Add([]byte(`{"active":["off"],"history":{"hd":[{},{}]},"timers":[null],"serial":-0,"time":1e308}`))
	f.Add([]byte(`[]`))
	c, err := Compile(doc(f, restoreChart))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := value.Decode(data, value.Limits{MaxBytes: 1 << 16, MaxDepth: 64})
		if err != nil {
			return
		}
		s, err := c.Restore(d)
		if err != nil {
			if fault.CodeOf(err) != fault.JF2010 {
				t.Fatalf("restore: %v", err)
			}
			return
		}
		checkState(t, c, s)
		for _, ev := range []string{"s", "d", "p", "none"} {
			r, err := c.Step(s, ev, StepOptions{})
			checkFault(t, "step", err)
			if err == nil {
				checkState(t, c, r.State)
			}
		}
		r, err := c.Advance(s, s.Time+1000, AdvanceOptions{One: len(data)%2 == 0})
		checkFault(t, "advance", err)
		if err == nil {
			checkState(t, c, r.State)
		}
	})
}
