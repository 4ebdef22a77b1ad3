package run

import (
	"errors"
	"strings"
	"testing"
)

func pauseAt(at float64) Message {
	return Message{Kind: KindPause, Time: at, Reason: "upstream down", Operator: "ops"}
}

func resumeAt(at float64) Message { return Message{Kind: KindResume, Time: at} }

// roundTrip stores and reloads a state, as a dispatcher does between
// inputs: what a paused run holds must survive its record.
func roundTrip(t *testing.T, st *State) *State {
	t.Helper()
	data, err := Encode(st)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

func noInvoke(t *testing.T, what string, effects []Effect) {
	t.Helper()
	for _, e := range effects {
		if e.Invoke != nil || e.Arm != nil {
			t.Fatalf("%s: a paused run produced %+v", what, effects)
		}
	}
}

func TestPausedRunHoldsThenResumesInOrder(t *testing.T) {
	t.Parallel()
	wf := compile(t, waitDoc)
	st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r1", Time: 1000}, Options{})
	inv := only(t, eff, invokeOf)

	st, eff = step(t, wf, st, pauseAt(1100), Options{})
	s := only(t, eff, settledOf)
	if st.Status != StatusPaused || s.Status != StatusPaused || s.Since != 1100 || s.Reason != "upstream down" || s.Operator != "ops" {
		t.Fatalf("paused: status %s, announced %+v", st.Status, s)
	}
	if err := st.Stranded(); err != nil {
		t.Fatalf("a paused run is not stranded: %v", err)
	}
	// The result and the event are held, in order; nothing is invoked.
	st, eff = step(t, wf, roundTrip(t, st), answer(inv, ok(3.0)), Options{})
	noInvoke(t, "result", eff)
	st, eff = step(t, wf, roundTrip(t, st), Message{Kind: KindEvent, Time: 1300, Event: &Event{Type: "go", Payload: "x", HasPayload: true}}, Options{})
	noInvoke(t, "event", eff)
	st = roundTrip(t, st)
	if len(st.Held) != 2 || st.Held[0].Kind != KindResult || st.Held[1].Kind != KindEvent || st.Status != StatusPaused {
		t.Fatalf("held %+v, status %s", st.Held, st.Status)
	}
	if _, _, err := Apply(wf, st, pauseAt(1400), Options{}); !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "already paused") {
		t.Fatalf("pause of a paused run: %v", err)
	}

	done, eff := step(t, wf, st, resumeAt(5000), Options{})
	if done.Status != StatusDone || done.Control.Active[0] != "/states/done" || done.Context.Event.Payload != "x" {
		t.Fatalf("after resume: %s at %v", done.Status, done.Control.Active)
	}
	if s := only(t, eff, settledOf); s.Status != StatusDone {
		t.Fatalf("announced %+v", s)
	}
	if done.Paused != nil || len(done.Held) != 0 {
		t.Fatalf("resume left the mark: %+v %+v", done.Paused, done.Held)
	}
	// The held result applied at its own time, not the resume's.
	if done.Control.Time >= 5000 {
		t.Fatalf("held inputs took the resume's time: %v", done.Control.Time)
	}
	if _, _, err := Apply(wf, done, resumeAt(6000), Options{}); !errors.Is(err, ErrRejected) {
		t.Fatalf("resume of a settled run: %v", err)
	}
}

func TestResumeFiresDueTimersAtOnce(t *testing.T) {
	t.Parallel()
	wf := compile(t, waitDoc)
	st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r1", Time: 1000}, Options{})
	inv := only(t, eff, invokeOf)
	st, eff = step(t, wf, st, Message{Kind: KindResult, Time: 2000, Result: &TaskResult{Activation: inv.Activation, Node: "task", Attempt: 1}}, Options{})
	arm := only(t, eff, armOf)
	if _, _, err := Apply(wf, st, resumeAt(2100), Options{}); !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "not paused") {
		t.Fatalf("resume of a waiting run: %v", err)
	}
	st, _ = step(t, wf, st, pauseAt(2100), Options{})
	// The wait's timer comes due while paused: held, not fired.
	st, eff = step(t, wf, st, Message{Kind: KindTimer, Time: arm.Deadline, Timer: &TimerFire{ID: arm.ID, Deadline: arm.Deadline}}, Options{})
	if len(eff) != 0 || st.Status != StatusPaused {
		t.Fatalf("timer while paused: %s %+v", st.Status, eff)
	}
	st, eff = step(t, wf, roundTrip(t, st), resumeAt(60000), Options{})
	if st.Status != StatusDone || st.Control.Active[0] != "/states/late" || st.Control.Time != arm.Deadline {
		t.Fatalf("after resume: %s at %v, time %v", st.Status, st.Control.Active, st.Control.Time)
	}
	if s := only(t, eff, settledOf); s.Status != StatusDone {
		t.Fatalf("announced %+v", s)
	}
}

func TestDeadlineWhilePaused(t *testing.T) {
	t.Parallel()
	wf := compile(t, oneTask)
	opts := timeouts(60000, 0)
	start := func() (*State, *Invoke) {
		st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r", Time: 1000, Input: 5.0}, opts)
		st, _ = step(t, wf, st, pauseAt(2000), opts)
		return st, only(t, eff, invokeOf)
	}
	// The result came before the deadline fire: the attempt succeeds.
	st, inv := start()
	st, _ = step(t, wf, st, Message{Kind: KindResult, Time: 50000, Result: &TaskResult{Activation: inv.Activation, Node: inv.Node, Attempt: 1, Output: 7.0}}, opts)
	st, _ = step(t, wf, st, deadlineFire(61000), opts)
	st, _ = step(t, wf, st, resumeAt(90000), opts)
	if st.Status != StatusDone || st.Context.Data != 7.0 {
		t.Fatalf("result before deadline: %s data %v", st.Status, st.Context.Data)
	}
	// The deadline fire came first: the attempt times out and is retried
	// at resume; the late result is refused and noted.
	st, inv = start()
	st, _ = step(t, wf, st, deadlineFire(61000), opts)
	st, _ = step(t, wf, st, Message{Kind: KindResult, Time: 62000, Result: &TaskResult{Activation: inv.Activation, Node: inv.Node, Attempt: 1, Output: 7.0}}, opts)
	st, eff := step(t, wf, st, resumeAt(90000), opts)
	if st.Status != StatusRunning || armed(eff, "r1") == nil {
		t.Fatalf("deadline before result: %s, effects %+v", st.Status, eff)
	}
	if len(st.Ignored) != 1 || st.Ignored[0].Kind != KindResult || !strings.Contains(st.Ignored[0].Reason, "refused at resume") {
		t.Fatalf("ignored %+v", st.Ignored)
	}
	if err := st.Stranded(); err != nil {
		t.Fatal(err)
	}
}

func TestResumeArmsTimersWhoseFiresWereRefused(t *testing.T) {
	t.Parallel()
	wf := compile(t, oneTask)
	opts := timeouts(60000, 0)
	opts.MaxBuffered = 1
	st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r", Time: 1000, Input: 5.0}, opts)
	inv := only(t, eff, invokeOf)
	st, _ = step(t, wf, st, pauseAt(2000), opts)
	st, _ = step(t, wf, st, Message{Kind: KindEvent, Time: 3000, Event: &Event{Type: "noise"}}, opts)
	// The hold is full: the deadline fire is refused, not held.
	if _, _, err := Apply(wf, st, deadlineFire(61000), opts); !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "MaxBuffered") {
		t.Fatalf("fire past the bound: %v", err)
	}
	st, eff = step(t, wf, st, resumeAt(90000), opts)
	if a := armed(eff, DeadlineTimer); a == nil || a.Deadline != 61000 {
		t.Fatalf("resume did not arm the deadline timer again: %+v", eff)
	}
	if st.Status != StatusRunning || st.Work.Running[inv.Node] == nil {
		t.Fatalf("after resume: %s", st.Status)
	}
}

func TestTerminate(t *testing.T) {
	t.Parallel()
	wf := compile(t, oneTask) // a failure would be caught: terminate skips catch
	opts := timeouts(60000, 0)
	for _, paused := range []bool{false, true} {
		st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r", Time: 1000, Input: 5.0}, opts)
		inv := only(t, eff, invokeOf)
		if paused {
			st, _ = step(t, wf, st, pauseAt(1500), opts)
		}
		st, eff = step(t, wf, st, Message{Kind: KindTerminate, Time: 2000, Reason: "fraud", Operator: "ops"}, opts)
		s := only(t, eff, settledOf)
		if st.Status != StatusTerminated || !st.Status.Terminal() || s.Status != StatusTerminated || s.Reason != "fraud" || s.Since != 2000 {
			t.Fatalf("paused=%v: status %s, announced %+v", paused, st.Status, s)
		}
		if only(t, eff, func(e Effect) *DisarmTimer { return e.Disarm }).ID != DeadlineTimer || st.Work != nil || st.Held != nil {
			t.Fatalf("paused=%v: terminate left work or timers: %+v", paused, eff)
		}
		st = roundTrip(t, st)
		_, _, err := Apply(wf, st, answer(inv, ok(1.0)), opts)
		if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "is terminated") {
			t.Fatalf("paused=%v: later result: %v", paused, err)
		}
		for _, k := range []Kind{KindPause, KindResume, KindTerminate, KindCancel} {
			if _, _, err := Apply(wf, st, Message{Kind: k, Time: 3000}, opts); !errors.Is(err, ErrRejected) {
				t.Fatalf("paused=%v: %s of a terminated run: %v", paused, k, err)
			}
		}
	}
}

func TestCancelOfAPausedRun(t *testing.T) {
	t.Parallel()
	wf := compile(t, waitDoc)
	st, _ := step(t, wf, nil, Message{Kind: KindStart, RunID: "r", Time: 1000}, Options{})
	st, _ = step(t, wf, st, pauseAt(1500), Options{})
	st, _ = step(t, wf, st, Message{Kind: KindEvent, Time: 1600, Event: &Event{Type: "go"}}, Options{})
	st, _ = step(t, wf, st, Message{Kind: KindCancel, Time: 2000}, Options{})
	if st.Status != StatusCancelled || st.Paused != nil || st.Held != nil {
		t.Fatalf("cancel of a paused run: %s %+v %+v", st.Status, st.Paused, st.Held)
	}
}

func TestPauseOfSettledRunRejected(t *testing.T) {
	t.Parallel()
	wf := compile(t, oneTask)
	st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r", Time: 1000, Input: 5.0}, Options{})
	st, _ = step(t, wf, st, answer(only(t, eff, invokeOf), ok(1.0)), Options{})
	if _, _, err := Apply(wf, st, pauseAt(5000), Options{}); !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "is done") {
		t.Fatalf("pause of a done run: %v", err)
	}
}
