package workflow

import (
	"fmt"
	"testing"
)

// fiftyStates is a 50-state workflow mixing every form: ten rounds of
// work, a bounded choice back to the work, a wait with a timer, a nested
// flow, and a final at the end.
func fiftyStates() map[string]any {
	states := map[string]any{}
	const rounds = 10
	for r := range rounds {
		next := fmt.Sprintf("r%d.work", r+1)
		if r == rounds-1 {
			next = "end"
		}
		p := func(s string) string { return fmt.Sprintf("r%d.%s", r, s) }
		states[p("work")] = map[string]any{
			"work":  map[string]any{"task": "step", "version": "1", "with": map[string]any{"n": "$.n"}},
			"input": map[string]any{"n": "$.context.data.n"}, "then": p("check"), "catch": p("wait"), "limit": 3.0,
		}
		states[p("check")] = map[string]any{
			"choose":    []any{map[string]any{"guard": "$.context.data.retry", "to": p("work")}, map[string]any{"guard": "$.context.data.wait", "to": p("wait")}},
			"otherwise": p("nested"),
		}
		states[p("wait")] = map[string]any{
			"on":    []any{map[string]any{"event": "go", "guard": "$.payload.ok", "to": p("nested")}},
			"after": map[string]any{"ms": 1000.0, "to": p("work")},
		}
		states[p("nested")] = map[string]any{"flow": map[string]any{"initial": "job", "states": map[string]any{
			"job": map[string]any{"work": map[string]any{"task": "job", "version": "2"}, "then": "end"},
			"end": map[string]any{"final": true},
		}}, "then": next}
		if r < rounds-1 {
			states[p("note")] = map[string]any{"final": true}
		}
	}
	states["end"] = map[string]any{"final": true}
	return map[string]any{"$workflow": "0.2", "revision": "bench/1", "initial": "r0.work", "states": states}
}

func BenchmarkLower50(b *testing.B) {
	doc := fiftyStates()
	l, err := Lower(doc)
	if err != nil {
		b.Fatal(err)
	}
	if n := len(l.States); n != 70 || len(l.Specs) != n {
		// 50 declared at the top plus 2 nested in each of 10 flows.
		b.Fatalf("%d states", n)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Lower(doc); err != nil {
			b.Fatal(err)
		}
	}
}
