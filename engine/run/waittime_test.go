package run

import (
	"fmt"
	"testing"
)

// afterWork is a wait whose timer follows a task: a zero delay, or a
// delay whose deadline a later call passes.
const afterWork = `{"$workflow":"0.2","revision":"w1","initial":"w1","states":{
 "w1":{"on":[{"event":"go","to":"job"}]},
 "job":{"work":{"task":"job","version":"1"},"then":"w2"},
 "w2":{"on":[{"event":"stop","to":"done"}],"after":{"ms":%s,"to":"late"}},
 "late":{"final":true},"done":{"final":true}}}`

// TestZeroDelayAfterWorkFiresWithTheResult checks the fleet against the
// reference's rule: a wait the result of a task leads to reads the
// result's time, so a zero-delay timer there fires in the same step and
// leaves nothing armed.
func TestZeroDelayAfterWorkFiresWithTheResult(t *testing.T) {
	t.Parallel()
	wf := compile(t, fmt.Sprintf(afterWork, "0"))
	st, _ := step(t, wf, nil, Message{Kind: KindStart, RunID: "r", Time: 10}, Options{})
	st, eff := step(t, wf, st, Message{Kind: KindEvent, Time: 20, Event: &Event{Type: "go"}}, Options{})
	inv := only(t, eff, invokeOf)
	st, eff = step(t, wf, st, Message{Kind: KindResult, Time: 30, Result: &TaskResult{
		Activation: inv.Activation, Node: inv.Node, Attempt: inv.Attempt, Output: 1.0,
	}}, Options{})
	if st.Status != StatusDone || st.Control.Active[0] != "/states/late" {
		t.Fatalf("status %s at %v, want done at /states/late", st.Status, st.Control.Active)
	}
	for _, e := range eff {
		if e.Arm != nil {
			t.Fatalf("a timer was left armed: %+v", e.Arm)
		}
	}
	if st.Control.Time != 30 {
		t.Fatalf("time %v, want the result's 30", st.Control.Time)
	}
}

// TestWaitAfterWorkTakesTheResultTime checks that the control time at a
// wait a result leads to is the result's, and its timer counts from it.
func TestWaitAfterWorkTakesTheResultTime(t *testing.T) {
	t.Parallel()
	wf := compile(t, fmt.Sprintf(afterWork, "1000"))
	st, _ := step(t, wf, nil, Message{Kind: KindStart, RunID: "r", Time: 10}, Options{})
	st, eff := step(t, wf, st, Message{Kind: KindEvent, Time: 20, Event: &Event{Type: "go"}}, Options{})
	inv := only(t, eff, invokeOf)
	st, eff = step(t, wf, st, Message{Kind: KindResult, Time: 500, Result: &TaskResult{
		Activation: inv.Activation, Node: inv.Node, Attempt: inv.Attempt, Output: 1.0,
	}}, Options{})
	arm := only(t, eff, armOf)
	if st.Status != StatusWaiting || st.Control.Time != 500 || arm.Deadline != 1500 {
		t.Fatalf("status %s, time %v, timer at %v; want waiting at 500, timer at 1500", st.Status, st.Control.Time, arm.Deadline)
	}
}
