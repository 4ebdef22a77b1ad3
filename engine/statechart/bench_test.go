package statechart

import "testing"

// benchChart is a small chart in the shape workflows lower to: a compound
// flow with a wait state, a delay, a guard-free choice and a final state.
func benchChart(b *testing.B) *Chart {
	b.Helper()
	c, err := Compile(map[string]any{
		"$fsm": "0.2", "initial": "flow",
		"states": []any{
			map[string]any{"id": "flow", "initial": "work"},
			map[string]any{"id": "work", "parent": "flow"},
			map[string]any{"id": "wait", "parent": "flow"},
			map[string]any{"id": "end", "parent": "flow", "final": true},
			map[string]any{"id": "done", "final": true},
		},
		"transitions": []any{
			map[string]any{"from": "work", "event": "@workflow/done", "to": "wait"},
			map[string]any{"from": "wait", "event": "event:again", "to": "work"},
			map[string]any{"from": "wait", "event": "event:finish", "to": "end"},
			map[string]any{"from": "wait", "after": 1000.0, "to": "end"},
			map[string]any{"from": "flow", "done": true, "to": "done"},
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func BenchmarkStep(b *testing.B) {
	c := benchChart(b)
	start, err := c.Start(StartOptions{})
	if err != nil {
		b.Fatal(err)
	}
	s := start.State
	b.ReportAllocs()
	for b.Loop() {
		r, err := c.Step(s, "@workflow/done", StepOptions{})
		if err != nil || !r.Changed {
			b.Fatal(err)
		}
	}
}

func BenchmarkStepIgnored(b *testing.B) {
	c := benchChart(b)
	start, err := c.Start(StartOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Step(start.State, "nothing", StepOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLifecycle runs a workflow-shaped lifecycle: start, ten
// work/wait rounds, then a timer that completes the flow.
func BenchmarkLifecycle(b *testing.B) {
	c := benchChart(b)
	ctx := map[string]any{"input": 1.0, "data": 1.0}
	b.ReportAllocs()
	for b.Loop() {
		r, err := c.Start(StartOptions{Context: ctx})
		if err != nil {
			b.Fatal(err)
		}
		now := 0.0
		for range 10 {
			now += 10
			n := now
			if r, err = c.Step(r.State, "@workflow/done", StepOptions{Now: &n, Context: ctx}); err != nil {
				b.Fatal(err)
			}
			if r, err = c.Step(r.State, "event:again", StepOptions{Context: ctx}); err != nil {
				b.Fatal(err)
			}
		}
		if r, err = c.Step(r.State, "@workflow/done", StepOptions{Context: ctx}); err != nil {
			b.Fatal(err)
		}
		if r, err = c.Advance(r.State, now+5000, AdvanceOptions{Context: ctx, One: true}); err != nil || !r.Final {
			b.Fatal(err, r.Final)
		}
	}
}
