package query

import (
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
)

// TestFramesDoNotCarryOver runs evaluations that fail (steps spent, an
// unbound external) between ones that succeed: a recycled frame must
// start from its query's own limits and bindings every time.
func TestFramesDoNotCarryOver(t *testing.T) {
	t.Parallel()
	tight, err := Compile(mustJSON(t, `{"$sum": {"$for": {"x": {"$range": [1, 100]}}, "$return": "$x"}}`), Options{Limits: Limits{Steps: 50}})
	if err != nil {
		t.Fatal(err)
	}
	ext, err := Compile(mustJSON(t, `{"$add": ["$n", "$.k"]}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	loose, err := Compile(mustJSON(t, `{"$sum": {"$for": {"x": {"$range": [1, 100]}}, "$return": "$x"}}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	data := mustJSON(t, `{"k": 2}`)
	for range 50 {
		if _, _, err := tight.Eval(nil, nil); fault.CodeOf(err) != fault.JQ2009 {
			t.Fatalf("tight: %v, want JQ2009", err)
		}
		if _, _, err := ext.Eval(data, nil); fault.CodeOf(err) != fault.JQ2006 {
			t.Fatalf("unbound: %v, want JQ2006", err)
		}
		if v, ok, err := loose.Eval(nil, nil); err != nil || !ok || v != 5050.0 {
			t.Fatalf("loose after a failure: %v %v %v, want 5050", v, ok, err)
		}
		if v, _, err := ext.Eval(data, map[string]any{"n": 1.0}); err != nil || v != 3.0 {
			t.Fatalf("bound after unbound: %v %v, want 3", v, err)
		}
	}
}

// TestGuardsAllocateNothing holds the guards of BenchmarkGuard to no
// allocation per evaluation: the frame is recycled.
func TestGuardsAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items at random")
	}
	q, err := Compile(mustJSON(t, `{"$gt": ["$.context.data", 2]}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := mustJSON(t, `{"context": {"data": 3}}`)
	if n := testing.AllocsPerRun(200, func() {
		if ok, err := q.EBV(ctx, nil); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}); n != 0 {
		t.Errorf("a guard allocates %v times per evaluation, want 0", n)
	}
}
