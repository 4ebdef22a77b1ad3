package run

import (
	"errors"
	"strings"
	"testing"
)

func timeouts(attempt, closing float64) Options {
	return Options{
		Retry:    func(string, string) RetryPolicy { return RetryPolicy{MaxAttempts: 2, InitialIntervalMs: 100} },
		Timeouts: func(string, string) Timeouts { return Timeouts{AttemptMs: attempt, ScheduleToCloseMs: closing} },
	}
}

func deadlineFire(at float64) Message {
	return Message{Kind: KindTimer, Time: at, Timer: &TimerFire{ID: DeadlineTimer, Deadline: at}}
}

func retryFire(arm *ArmTimer) Message {
	return Message{Kind: KindTimer, Time: arm.Deadline, Timer: &TimerFire{ID: arm.ID, Deadline: arm.Deadline}}
}

func armed(effects []Effect, id string) *ArmTimer {
	for _, e := range effects {
		if e.Arm != nil && e.Arm.ID == id {
			return e.Arm
		}
	}
	return nil
}

func TestAttemptDeadlineRetriesThenFails(t *testing.T) {
	t.Parallel()
	wf := compile(t, `{"$workflow":"0.2","revision":"r1","initial":"a","states":{
	 "a":{"work":{"task":"inc","version":"1"},"then":"b"},"b":{"final":true}}}`)
	opts := timeouts(60000, 0)
	st, effects := step(t, wf, nil, Message{Kind: KindStart, Time: 1000, RunID: "r", Input: 1.0}, opts)
	if err := st.Stranded(); err != nil {
		t.Fatal(err)
	}
	d := armed(effects, DeadlineTimer)
	if d == nil || d.Deadline != 61000 || st.Deadline != 61000 {
		t.Fatalf("deadline timer %+v, state deadline %v; want 61000", d, st.Deadline)
	}
	// A fire for another deadline, or too early, changes nothing.
	if _, _, err := Apply(wf, st, deadlineFire(60000), opts); !errors.Is(err, ErrRejected) {
		t.Fatalf("stale deadline fire: %v, want a rejection", err)
	}
	// Nobody answers: the attempt times out and is retried.
	st, effects = step(t, wf, st, deadlineFire(61000), opts)
	retry := armed(effects, "r1")
	if retry == nil || st.Status != StatusRunning {
		t.Fatalf("after the first deadline: status %s effects %+v, want a retry timer", st.Status, effects)
	}
	if err := st.Stranded(); err != nil {
		t.Fatal(err)
	}
	// No attempt is in flight while the retry waits: the deadline goes.
	if st.Deadline != 0 || only(t, effects, func(e Effect) *DisarmTimer { return e.Disarm }) == nil {
		t.Fatalf("deadline %v while only a retry waits", st.Deadline)
	}
	st, effects = step(t, wf, st, retryFire(retry), opts)
	inv := only(t, effects, invokeOf)
	if inv.Attempt != 2 || st.Deadline != retry.Deadline+60000 {
		t.Fatalf("second attempt %d with deadline %v, want 2 at %v", inv.Attempt, st.Deadline, retry.Deadline+60000)
	}
	// A result of the timed-out first attempt is refused.
	first := *inv
	first.Attempt = 1
	if _, _, err := apply(wf, st, answer(&first, ok(5.0)), opts); !errors.Is(err, ErrRejected) {
		t.Fatalf("result of a timed-out attempt: %v, want a rejection", err)
	}
	st, _ = step(t, wf, st, deadlineFire(st.Deadline), opts)
	if st.Status != StatusFailed || !strings.Contains(st.Error.Message, "inc@1 attempt 2 had no accepted result within its attemptTimeout of 1m") {
		t.Fatalf("after the last deadline: %s %+v", st.Status, st.Error)
	}
	if err := st.Stranded(); err != nil {
		t.Fatal(err)
	}
}

func TestDeadlineCaughtLikeATaskError(t *testing.T) {
	t.Parallel()
	wf := compile(t, oneTask)
	opts := timeouts(1000, 0)
	opts.Retry = func(string, string) RetryPolicy { return NoRetry }
	st, _ := step(t, wf, nil, Message{Kind: KindStart, Time: 0, RunID: "r", Input: 1.0}, opts)
	st, effects := step(t, wf, st, deadlineFire(1000), opts)
	if st.Status != StatusDone || st.Control.Active[0] != "/states/oops" {
		t.Fatalf("status %s in %v, want done in the catch state", st.Status, st.Control.Active)
	}
	if only(t, effects, func(e Effect) *DisarmTimer { return e.Disarm }).ID != DeadlineTimer {
		t.Fatal("settling did not drop the deadline timer")
	}
	data := st.Context.Data.(map[string]any)["error"].(map[string]any)
	if !strings.Contains(data["message"].(string), "attemptTimeout of 1s") {
		t.Fatalf("caught error %v", data)
	}
}

func TestScheduleToCloseIsNotRetried(t *testing.T) {
	t.Parallel()
	wf := compile(t, oneTask)
	opts := timeouts(5000, 3000)
	st, effects := step(t, wf, nil, Message{Kind: KindStart, Time: 0, RunID: "r", Input: 1.0}, opts)
	if d := armed(effects, DeadlineTimer); d == nil || d.Deadline != 3000 {
		t.Fatalf("deadline %+v, want schedule-to-close at 3000", d)
	}
	st, _ = step(t, wf, st, deadlineFire(3000), opts)
	if st.Control.Active[0] != "/states/oops" {
		t.Fatalf("state %v, want the catch state with no retry", st.Control.Active)
	}
	msg := st.Context.Data.(map[string]any)["error"].(map[string]any)["message"].(string)
	if !strings.Contains(msg, "scheduleToClose of 3s") {
		t.Fatalf("message %q", msg)
	}
}

func TestFanOutDeadlineFollowsTheEarliest(t *testing.T) {
	t.Parallel()
	wf := compile(t, `{"$workflow":"0.2","revision":"r1","initial":"a","states":{
	 "a":{"work":{"dag":{"$dag":"0.1","nodes":{"in":{"kind":"input"},
	   "x":{"kind":"task","run":"fast","version":"1"},"y":{"kind":"task","run":"slow","version":"1"},
	   "q":{"kind":"query","query":{"x":"$.x","y":"$.y"}},"out":{"kind":"output"}},
	   "edges":[{"from":"in","to":"x"},{"from":"in","to":"y"},{"from":"x","to":"q","port":"x"},{"from":"y","to":"q","port":"y"},{"from":"q","to":"out"}]}},"then":"b"},"b":{"final":true}}}`)
	opts := Options{Timeouts: func(task, _ string) Timeouts {
		if task == "fast" {
			return Timeouts{AttemptMs: 1000}
		}
		return Timeouts{AttemptMs: 9000}
	}}
	st, effects := step(t, wf, nil, Message{Kind: KindStart, Time: 0, RunID: "r"}, opts)
	if st.Deadline != 1000 || len(effects) == 0 {
		t.Fatalf("deadline %v, want the fast task's 1000", st.Deadline)
	}
	var fast *Invoke
	for _, e := range effects {
		if e.Invoke != nil && e.Invoke.Task == "fast" {
			fast = e.Invoke
		}
	}
	st, effects = step(t, wf, st, answer(fast, ok(1.0)), opts)
	if d := armed(effects, DeadlineTimer); d == nil || d.Deadline != 9000 || st.Deadline != 9000 {
		t.Fatalf("after the fast result: %+v, deadline %v; want it moved to 9000", effects, st.Deadline)
	}
	if err := st.Stranded(); err != nil {
		t.Fatal(err)
	}
}

func TestNoTimeoutsNoDeadline(t *testing.T) {
	t.Parallel()
	wf := compile(t, oneTask)
	st, effects := step(t, wf, nil, Message{Kind: KindStart, Time: 0, RunID: "r", Input: 1.0}, Options{})
	if armed(effects, DeadlineTimer) != nil || st.Deadline != 0 {
		t.Fatal("a deadline without timeouts")
	}
	if err := st.Stranded(); err == nil {
		t.Fatal("an attempt without a deadline is not reported as stranded")
	}
}

func TestIgnoredEvents(t *testing.T) {
	t.Parallel()
	wf := compile(t, `{"$workflow":"0.2","revision":"r1","initial":"w","states":{
	 "w":{"on":[{"event":"pay","guard":{"$gt":["$.payload",5]},"to":"done"},{"event":"stop","to":"done"}]},
	 "done":{"final":true}}}`)
	st, _ := step(t, wf, nil, Message{Kind: KindStart, Time: 0, RunID: "r"}, Options{})
	for _, c := range []struct {
		ev   Event
		want string
	}{
		{Event{Type: "pya", Payload: 9.0, HasPayload: true}, `event "pya" matched no transition: the run waits in /states/w for "pay", "stop"`},
		{Event{Type: "pay", Payload: 1.0, HasPayload: true}, `no guard of its branches for "pay" held`},
	} {
		next, _ := step(t, wf, st, Message{Kind: KindEvent, Time: 1, Event: &c.ev}, Options{})
		if next.Status != StatusWaiting || len(next.Ignored) != 1 || !strings.Contains(next.Ignored[0].Reason, c.want) {
			t.Fatalf("%s: status %s ignored %+v, want %q", c.ev.Type, next.Status, next.Ignored, c.want)
		}
		data, err := Encode(next)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "matched no transition") {
			t.Fatal("the ignored note is stored in the state")
		}
	}
	next, _ := step(t, wf, st, Message{Kind: KindEvent, Time: 1, Event: &Event{Type: "pay", Payload: 9.0, HasPayload: true}}, Options{})
	if next.Status != StatusDone || len(next.Ignored) != 0 {
		t.Fatalf("a matching event: %s %+v", next.Status, next.Ignored)
	}
}
