package run

import (
	"errors"
	"strings"
	"testing"
)

func resetAt(at float64) Message { return Message{Kind: KindReset, Time: at, Reason: "rerun"} }

func disarmed(effects []Effect, id string) bool {
	for _, e := range effects {
		if e.Disarm != nil && e.Disarm.ID == id {
			return true
		}
	}
	return false
}

func TestResetRunsWhatWasInFlightAgain(t *testing.T) {
	t.Parallel()
	wf := compile(t, fanDoc)
	opts := redriveOpts(3)
	st, effects := step(t, wf, nil, Message{Kind: KindStart, Time: 0, RunID: "r", Input: 1.0}, opts)
	first := invokes(effects)
	afterX, _ := step(t, wf, st, answer(first["x"], ok("X")), opts)
	st, _ = step(t, wf, afterX, answer(first["c"], ok("C")), opts)
	cur, _ := step(t, wf, st, answer(first["y"], ok("Y")), opts)
	if cur.Status != StatusDone {
		t.Fatalf("the run is %s, want done", cur.Status)
	}

	next, effects, err := Reset(wf, cur, roundTrip(t, afterX), resetAt(cur.Control.Time+1000), opts)
	if err != nil {
		t.Fatal(err)
	}
	if next.Status != StatusRunning || next.Seq != cur.Seq+1 || next.Resets != 1 || next.Pending == nil {
		t.Fatalf("after the reset: %s seq %d resets %d pending %+v", next.Status, next.Seq, next.Resets, next.Pending)
	}
	again := invokes(effects)
	if len(again) != 2 || again["c"] == nil || again["y"] == nil {
		t.Fatalf("the reset invoked %v, want c and y (x had succeeded at that point)", again)
	}
	for node, inv := range again {
		if inv.Attempt != int(next.Seq) || inv.Activation != first[node].Activation {
			t.Fatalf("%s: attempt %d of %s, want attempt %d of the same activation", node, inv.Attempt, inv.Activation, next.Seq)
		}
	}
	if next.Work.Values["x"] != "X" || next.Deadline == 0 || armed(effects, DeadlineTimer) == nil {
		t.Fatalf("x %v, deadline %v, effects %+v", next.Work.Values["x"], next.Deadline, effects)
	}
	if s := only(t, effects, settledOf); s.Status != StatusRunning {
		t.Fatalf("announced %+v", s)
	}
	if err := next.Stranded(); err != nil {
		t.Fatal(err)
	}
	// A late result of a superseded attempt is refused, token or not.
	if _, _, err := apply(wf, next, answer(first["c"], ok("late")), opts); !errors.Is(err, ErrRejected) {
		t.Fatalf("a superseded attempt's result: %v", err)
	}
	next, _ = step(t, wf, next, answer(again["c"], ok("C2")), opts)
	next, _ = step(t, wf, next, answer(again["y"], ok("Y2")), opts)
	want := map[string]any{"x": "X", "c": "C2", "y": "Y2"}
	if next.Status != StatusDone || !sameValues(next.Context.Data, want) {
		t.Fatalf("after the reset run: %s data %v, want done with %v", next.Status, next.Context.Data, want)
	}
}

func sameValues(got any, want map[string]any) bool {
	m, ok := got.(map[string]any)
	if !ok || len(m) != len(want) {
		return false
	}
	for k, v := range want {
		if m[k] != v {
			return false
		}
	}
	return true
}

func TestResetToAWaitArmsItsTimers(t *testing.T) {
	t.Parallel()
	wf := compile(t, waitDoc)
	st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r1", Time: 1000}, Options{})
	inv := only(t, eff, invokeOf)
	waiting, eff := step(t, wf, st, Message{Kind: KindResult, Time: 2000, Result: &TaskResult{Activation: inv.Activation, Node: "task", Attempt: 1}}, Options{})
	arm := only(t, eff, armOf)
	cur, _ := step(t, wf, waiting, Message{Kind: KindEvent, Time: 3000, Event: &Event{Type: "go"}}, Options{})
	if cur.Status != StatusDone {
		t.Fatalf("the run is %s, want done", cur.Status)
	}

	// Before the wait's deadline: it waits again, its timer armed again.
	next, eff, err := Reset(wf, cur, waiting, resetAt(4000), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if next.Status != StatusWaiting || next.Control.Active[0] != "/states/w" {
		t.Fatalf("after the reset: %s at %v", next.Status, next.Control.Active)
	}
	if a := only(t, eff, armOf); *a != *arm {
		t.Fatalf("armed %+v, want the wait's timer %+v", a, arm)
	}
	if s := only(t, eff, settledOf); s.Status != StatusWaiting {
		t.Fatalf("announced %+v", s)
	}
	// The fire of that timer takes the wait's way out.
	done, _ := step(t, wf, next, Message{Kind: KindTimer, Time: arm.Deadline, Timer: &TimerFire{ID: arm.ID, Deadline: arm.Deadline}}, Options{})
	if done.Status != StatusDone || done.Control.Active[0] != "/states/late" {
		t.Fatalf("after the fire: %s at %v", done.Status, done.Control.Active)
	}

	// After the deadline: the timer that came due fires in the reset.
	late, _, err := Reset(wf, cur, waiting, resetAt(60000), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if late.Status != StatusDone || late.Control.Active[0] != "/states/late" {
		t.Fatalf("a reset past the wait's deadline: %s at %v, want done in late", late.Status, late.Control.Active)
	}
}

func TestResetDisarmsTimersArmedSince(t *testing.T) {
	t.Parallel()
	wf := compile(t, waitDoc)
	started, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r1", Time: 1000}, Options{})
	inv := only(t, eff, invokeOf)
	cur, eff := step(t, wf, started, Message{Kind: KindResult, Time: 2000, Result: &TaskResult{Activation: inv.Activation, Node: "task", Attempt: 1}}, Options{})
	wait := only(t, eff, armOf)

	next, eff, err := Reset(wf, cur, started, resetAt(2500), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !disarmed(eff, wait.ID) {
		t.Fatalf("the wait's timer %s armed after the point is not disarmed: %+v", wait.ID, eff)
	}
	again := only(t, eff, invokeOf)
	if again.Attempt != int(cur.Seq)+1 {
		t.Fatalf("task invoked again as attempt %d, want %d", again.Attempt, cur.Seq+1)
	}
	// The wait entered after the reset gets a timer of its own: its fire
	// and the superseded one's never share an id.
	next, eff = step(t, wf, next, Message{Kind: KindResult, Time: 3000, Result: &TaskResult{Activation: again.Activation, Node: "task", Attempt: again.Attempt}}, Options{})
	if a := only(t, eff, armOf); a.ID == wait.ID {
		t.Fatalf("the new wait's timer reuses the superseded id %s", a.ID)
	}
	if _, _, err := Apply(wf, next, Message{Kind: KindTimer, Time: wait.Deadline, Timer: &TimerFire{ID: wait.ID, Deadline: wait.Deadline}}, Options{}); !errors.Is(err, ErrRejected) {
		t.Fatalf("a superseded timer's fire: %v", err)
	}
}

func TestResetRefusals(t *testing.T) {
	t.Parallel()
	wf := compile(t, waitDoc)
	started, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r1", Time: 1000}, Options{})
	inv := only(t, eff, invokeOf)
	waiting, _ := step(t, wf, started, Message{Kind: KindResult, Time: 2000, Result: &TaskResult{Activation: inv.Activation, Node: "task", Attempt: 1}}, Options{})
	paused, _ := step(t, wf, waiting, pauseAt(2100), Options{})
	done, _ := step(t, wf, waiting, Message{Kind: KindEvent, Time: 3000, Event: &Event{Type: "go"}}, Options{})
	for _, c := range []struct {
		name    string
		cur, at *State
		want    string
	}{
		{"the run is paused", paused, started, "is paused: resume it first"},
		{"a settled point", done, done, "had already finished (done) at that point"},
		{"a paused point", done, paused, "was paused at that point"},
	} {
		_, _, err := Reset(wf, c.cur, c.at, resetAt(5000), Options{})
		if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a refusal saying %q", c.name, err, c.want)
		}
	}
}

const chainDoc = `{"$workflow":"0.2","revision":"r1","initial":"a","states":{
 "a":{"work":{"task":"p","version":"1"},"then":"b"},
 "b":{"work":{"task":"q","version":"1"},"then":"done"},
 "done":{"final":true}}}`

// An activation after the point comes again with the id it had on the
// superseded line: its attempts must not repeat a superseded attempt's
// number, whose result's message id the input stream would drop.
func TestResetNumbersLaterActivationsAboveTheSupersededLine(t *testing.T) {
	t.Parallel()
	wf := compile(t, chainDoc)
	opts := redriveOpts(3)
	start, effects := step(t, wf, nil, Message{Kind: KindStart, Time: 0, RunID: "r", Input: 1.0}, opts)
	p := invokes(effects)["task"]
	afterP, effects := step(t, wf, start, answer(p, ok("P")), opts)
	q := invokes(effects)["task"]
	cur, _ := step(t, wf, afterP, answer(q, ok("Q")), opts)
	if cur.Status != StatusDone {
		t.Fatalf("the run is %s, want done", cur.Status)
	}
	next, effects, err := Reset(wf, cur, roundTrip(t, start), resetAt(cur.Control.Time+1000), opts)
	if err != nil {
		t.Fatal(err)
	}
	p2 := invokes(effects)["task"]
	next, effects = step(t, wf, next, answer(p2, ok("P2")), opts)
	q2 := invokes(effects)["task"]
	if q2 == nil || q2.Activation != q.Activation {
		t.Fatalf("after the reset b invoked %+v, want the activation %s again", q2, q.Activation)
	}
	if q2.Attempt <= int(cur.Seq) {
		t.Fatalf("b's attempt after the reset is %d, want above %d (the superseded line's attempt was %d)", q2.Attempt, cur.Seq, q.Attempt)
	}
	next, _ = step(t, wf, next, answer(q2, ok("Q2")), opts)
	if next.Status != StatusDone {
		t.Fatalf("the reset run is %s, want done", next.Status)
	}
}
