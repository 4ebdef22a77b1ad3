package run

import (
	"errors"
	"strings"
	"testing"
)

// TestBufferedEventsBounded checks that the events a run holds while a
// task runs are bounded in number and size: one more is rejected with a
// reason naming the limit, and the run is unchanged.
func TestBufferedEventsBounded(t *testing.T) {
	t.Parallel()
	text := func(n int) any { return strings.Repeat("x", n) }
	cases := []struct {
		name     string
		opts     Options
		payloads []any // accepted, then one rejected
		says     string
	}{
		{"count", Options{MaxBuffered: 3}, []any{1.0, nil, "a", 2.0}, "holds 3 events for its next wait, the limit (MaxBuffered)"},
		{"bytes", Options{MaxBufferedBytes: 200}, []any{text(90), text(90), text(20)}, "more than the limit of 200 (MaxBufferedBytes)"},
		{
			"bytes of nested payloads",
			Options{MaxBufferedBytes: 100},
			[]any{map[string]any{"a": []any{text(40), true}}, []any{map[string]any{"b": text(40)}}},
			"(MaxBufferedBytes)",
		},
		{"default count", Options{}, make([]any, DefaultMaxBuffered+1), "holds 1000 events"},
		{"default bytes", Options{}, []any{text(DefaultMaxBufferedBytes / 2), text(DefaultMaxBufferedBytes / 2)}, "limit of 262144 (MaxBufferedBytes)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			wf := compile(t, waitDoc)
			st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r1", Time: 1000}, c.opts)
			inv := only(t, eff, invokeOf)
			event := func(p any) Message {
				return Message{Kind: KindEvent, Time: -1, Event: &Event{Type: "other", Payload: p, HasPayload: true}}
			}
			last := len(c.payloads) - 1
			for _, p := range c.payloads[:last] {
				st, _ = step(t, wf, st, event(p), c.opts)
			}
			if len(st.Buffered) != last {
				t.Fatalf("%d events buffered, want %d", len(st.Buffered), last)
			}
			next, _, err := apply(wf, st, event(c.payloads[last]), c.opts)
			if !errors.Is(err, ErrRejected) || next != nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("one more event: %v (state %v), want a rejection saying %q", err, next, c.says)
			}
			// The run goes on: the task's result reaches the wait, which
			// drops the events it has no transition for.
			st, eff = step(t, wf, st, answer(inv, ok(nil)), c.opts)
			if st.Status != StatusWaiting || len(st.Buffered) != 0 {
				t.Fatalf("after the result: %s with %d events", st.Status, len(st.Buffered))
			}
			_ = only(t, eff, armOf)
		})
	}
}

// TestWaitingRunBuffersNothing: an event for a waiting run is delivered
// at once (taken or dropped, as the reference does), so a publisher
// cannot grow the state of a waiting run however many it sends.
func TestWaitingRunBuffersNothing(t *testing.T) {
	t.Parallel()
	wf := compile(t, waitDoc)
	opts := Options{MaxBuffered: 1, MaxBufferedBytes: 10}
	st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r1", Time: 1000}, opts)
	st, _ = step(t, wf, st, answer(only(t, eff, invokeOf), ok(nil)), opts)
	for i := range 50 {
		st, eff = step(t, wf, st, Message{Kind: KindEvent, Time: -1, Event: &Event{Type: "other", Payload: strings.Repeat("y", 100), HasPayload: true}}, opts)
		if st.Status != StatusWaiting || len(st.Buffered) != 0 || len(eff) != 0 {
			t.Fatalf("event %d: %s holding %d events, effects %+v", i, st.Status, len(st.Buffered), eff)
		}
	}
	st, _ = step(t, wf, st, Message{Kind: KindEvent, Time: -1, Event: &Event{Type: "go"}}, opts)
	if st.Status != StatusDone || st.Control.Active[0] != "/states/done" {
		t.Fatalf("the awaited event: %s at %v", st.Status, st.Control.Active)
	}
}

func TestJSONSize(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    any
		want int
	}{
		{nil, 4},
		{true, 4},
		{false, 5},
		{12.5, 4},
		{"ab", 4},
		{[]any{}, 2},
		{map[string]any{}, 2},
		{[]any{1.0, "a", nil}, 12},
		{map[string]any{"k": 1.0, "j": []any{true}}, 18},
	} {
		if got := jsonSize(c.v); got != c.want {
			t.Errorf("jsonSize(%#v) = %d, want %d", c.v, got, c.want)
		}
	}
}
