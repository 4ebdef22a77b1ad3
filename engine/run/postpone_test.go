package run

import (
	"errors"
	"slices"
	"testing"
)

func TestPostponeStartsDueAttemptsOver(t *testing.T) {
	t.Parallel()
	wf := compile(t, oneTask)
	opts := timeouts(60000, 0)
	st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r", Time: 1000, Input: 5.0}, opts)
	first := only(t, eff, invokeOf)
	if due := DueTasks(wf, st, 60999); due != nil {
		t.Fatalf("due before the deadline: %v", due)
	}
	if due := DueTasks(wf, st, 61000); !slices.Equal(due, []TaskVersion{{"inc", "1"}}) {
		t.Fatalf("due at the deadline: %v", due)
	}
	other := Message{Kind: KindPostpone, Time: 61500, Postpone: &Postpone{Task: "other", Version: "1"}}
	if _, _, err := Apply(wf, st, other, opts); !errors.Is(err, ErrRejected) {
		t.Fatalf("postpone of another task: %v", err)
	}
	if _, _, err := Apply(wf, st, Message{Kind: KindPostpone, Time: 30000, Postpone: &Postpone{Task: "inc", Version: "1"}}, opts); !errors.Is(err, ErrRejected) {
		t.Fatalf("postpone before the deadline: %v", err)
	}
	st, eff = step(t, wf, roundTrip(t, st), Message{Kind: KindPostpone, Time: 61500, Postpone: &Postpone{Task: "inc", Version: "1"}}, opts)
	inv := only(t, eff, invokeOf)
	if inv.Attempt != 1 || inv.Deadline != 121500 || inv.Activation != first.Activation {
		t.Fatalf("re-invocation %+v", inv)
	}
	if a := armed(eff, DeadlineTimer); a == nil || a.Deadline != 121500 || st.Deadline != 121500 {
		t.Fatalf("deadline timer %+v, state %v", a, st.Deadline)
	}
	if err := st.Stranded(); err != nil {
		t.Fatal(err)
	}
	// The fire that led to the postpone is stale now.
	late := Message{Kind: KindTimer, Time: 61600, Timer: &TimerFire{ID: DeadlineTimer, Deadline: 61000}}
	if _, _, err := Apply(wf, st, late, opts); !errors.Is(err, ErrRejected) {
		t.Fatalf("the old deadline fire: %v", err)
	}
	st, _ = step(t, wf, st, answer(inv, ok(6.0)), opts)
	if st.Status != StatusDone || st.Context.Data != 6.0 {
		t.Fatalf("after the result: %s %v", st.Status, st.Context.Data)
	}
}

func TestPostponeRestartsScheduleToClose(t *testing.T) {
	t.Parallel()
	wf := compile(t, oneTask)
	opts := timeouts(0, 10000) // schedule-to-close only
	st, _ := step(t, wf, nil, Message{Kind: KindStart, RunID: "r", Time: 1000, Input: 5.0}, opts)
	st, eff := step(t, wf, st, Message{Kind: KindPostpone, Time: 11000, Postpone: &Postpone{Task: "inc", Version: "1"}}, opts)
	if inv := only(t, eff, invokeOf); inv.Deadline != 21000 || st.Work.Running[inv.Node].Scheduled != 11000 {
		t.Fatalf("re-invocation %+v, attempt %+v", inv, st.Work.Running[inv.Node])
	}
}
