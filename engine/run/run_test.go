package run

import (
	"errors"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/engine/workflow"
)

func compile(t testing.TB, doc string) *workflow.Workflow {
	t.Helper()
	wf, err := workflow.CompileJSON([]byte(doc), workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

const oneTask = `{"$workflow":"0.2","revision":"r1","initial":"a","states":{
 "a":{"work":{"task":"inc","version":"1"},"then":"c","catch":"oops"},
 "c":{"choose":[{"guard":{"$gt":["$.context.data",2]},"to":"big"}],"otherwise":"small"},
 "big":{"final":true},"small":{"final":true},"oops":{"final":true}}}`

const waitDoc = `{"$workflow":"0.2","revision":"r1","initial":"a","states":{
 "a":{"work":{"task":"inc","version":"1"},"then":"w"},
 "w":{"on":[{"event":"go","to":"done"}],"after":{"ms":5000,"to":"late"}},
 "done":{"final":true},"late":{"final":true}}}`

// step applies a message and fails the test on an error.
func step(t testing.TB, wf *workflow.Workflow, st *State, msg Message, opts Options) (*State, []Effect) {
	t.Helper()
	next, effects, err := apply(wf, st, msg, opts)
	if err != nil {
		t.Fatalf("%s: %v", msg.Kind, err)
	}
	return next, effects
}

func only[T any](t testing.TB, effects []Effect, pick func(Effect) *T) *T {
	t.Helper()
	var found *T
	for _, e := range effects {
		if p := pick(e); p != nil {
			if found != nil {
				t.Fatalf("more than one effect of a kind: %+v", effects)
			}
			found = p
		}
	}
	if found == nil {
		t.Fatalf("no effect of the kind in %+v", effects)
	}
	return found
}

func invokeOf(e Effect) *Invoke     { return e.Invoke }
func armOf(e Effect) *ArmTimer      { return e.Arm }
func settledOf(e Effect) *Settled   { return e.Settled }
func ok(out any) *TaskResult        { return &TaskResult{Output: out} }
func failed(msg string) *TaskResult { return &TaskResult{Error: &TaskError{Message: msg}} }

// answer reports a task result a little after the run's current time.
func answer(inv *Invoke, r *TaskResult) Message {
	r.Activation, r.Node, r.Attempt = inv.Activation, inv.Node, inv.Attempt
	return Message{Kind: KindResult, Time: -1, Result: r}
}

func apply(wf *workflow.Workflow, st *State, msg Message, opts Options) (*State, []Effect, error) {
	if msg.Time == -1 {
		msg.Time = st.Control.Time + 10
	}
	return Apply(wf, st, msg, opts)
}

func TestOneTaskLifecycle(t *testing.T) {
	t.Parallel()
	wf := compile(t, oneTask)
	st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r1", Input: 5.0, Time: 1}, Options{})
	inv := only(t, eff, invokeOf)
	if inv.Task != "inc" || inv.Version != "1" || inv.Input != 5.0 || inv.Attempt != 1 {
		t.Fatalf("invoke = %+v", inv)
	}
	if st.Status != StatusRunning || only(t, eff, settledOf).Status != StatusRunning {
		t.Fatalf("status %s", st.Status)
	}
	done, eff := step(t, wf, st, answer(inv, ok(6.0)), Options{})
	if done.Status != StatusDone || done.Context.Data != 6.0 || done.Control.Active[0] != "/states/big" {
		t.Fatalf("state %+v", done)
	}
	if s := only(t, eff, settledOf); s.Status != StatusDone || s.Result != 6.0 {
		t.Fatalf("settled %+v", s)
	}
	// The input state is untouched: Apply never modifies its argument.
	if st.Status != StatusRunning || st.Pending == nil || len(st.Context.Results) != 0 {
		t.Fatalf("Apply modified its input state: %+v", st)
	}
	if _, _, err := apply(wf, done, answer(inv, ok(7.0)), Options{}); !errors.Is(err, ErrRejected) {
		t.Fatalf("a result for a settled run: %v", err)
	}
}

func TestRejections(t *testing.T) {
	t.Parallel()
	wf := compile(t, oneTask)
	st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r1", Input: 1.0, Time: 1}, Options{})
	inv := only(t, eff, invokeOf)
	cases := map[string]Message{
		"start twice":        {Kind: KindStart, RunID: "r1", Time: 2},
		"unknown activation": {Kind: KindResult, Time: 2, Result: &TaskResult{Activation: "x", Node: "task", Attempt: 1}},
		"unknown node":       {Kind: KindResult, Time: 2, Result: &TaskResult{Activation: inv.Activation, Node: "nope", Attempt: 1}},
		"old attempt":        {Kind: KindResult, Time: 2, Result: &TaskResult{Activation: inv.Activation, Node: "task", Attempt: 2}},
		"no body":            {Kind: KindResult, Time: 2},
		"stale timer":        {Kind: KindTimer, Time: 2, Timer: &TimerFire{ID: "t9", Deadline: 3}},
		"stale retry":        {Kind: KindTimer, Time: 2, Timer: &TimerFire{ID: "r4", Deadline: 3}},
		"bad kind":           {Kind: "bogus", Time: 2},
	}
	for name, msg := range cases {
		if _, _, err := Apply(wf, st, msg, Options{}); !errors.Is(err, ErrRejected) {
			t.Errorf("%s: %v, want ErrRejected", name, err)
		}
	}
	if _, _, err := Apply(wf, st, Message{Kind: KindCancel, Time: 0}, Options{}); fault.CodeOf(err) != fault.JF2011 {
		t.Errorf("time moving backwards: %v", err)
	}
}

func TestRetriesThenCatch(t *testing.T) {
	t.Parallel()
	wf := compile(t, oneTask)
	st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r1", Input: 1.0, Time: 1000}, Options{})
	inv := only(t, eff, invokeOf)
	var deadlines []float64
	for attempt := 1; attempt <= 2; attempt++ {
		st, eff = step(t, wf, st, answer(inv, failed("boom")), Options{})
		arm := only(t, eff, armOf)
		deadlines = append(deadlines, arm.Deadline)
		if st.Status != StatusRunning {
			t.Fatalf("attempt %d: status %s", attempt, st.Status)
		}
		st, eff = step(t, wf, st, Message{Kind: KindTimer, Time: arm.Deadline, Timer: &TimerFire{ID: arm.ID, Deadline: arm.Deadline}}, Options{})
		inv = only(t, eff, invokeOf)
		if inv.Attempt != attempt+1 {
			t.Fatalf("re-invoked attempt %d, want %d", inv.Attempt, attempt+1)
		}
	}
	// Backoff with jitter in [0.5, 1] of 1 s, then 2 s.
	if d := deadlines[0] - 1010; d < 500 || d > 1000 {
		t.Errorf("first backoff %v ms", d)
	}
	st, _ = step(t, wf, st, answer(inv, failed("boom")), Options{})
	if st.Status != StatusDone || st.Control.Active[0] != "/states/oops" {
		t.Fatalf("after the last attempt: %s at %v", st.Status, st.Control.Active)
	}
	caught := st.Context.Data.(map[string]any)["error"].(map[string]any)
	if caught["message"] != "JF2006: node 'task' failed: boom at /nodes/task" || caught["nodeId"] != "task" {
		t.Errorf("caught error %v", caught)
	}
	want := Caught{Code: "JF2006", Message: "JF2006: node 'task' failed: boom at /nodes/task", Node: "task"}
	if c := CaughtIn(st.Context.Data); c == nil || *c != want {
		t.Errorf("CaughtIn(data) = %+v, want %+v", c, want)
	}
}

func TestNonRetryableFailsAtOnce(t *testing.T) {
	t.Parallel()
	wf := compile(t, waitDoc) // no catch: the failure ends the run
	st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r1", Time: 1}, Options{})
	inv := only(t, eff, invokeOf)
	st, eff = step(t, wf, st, answer(inv, &TaskResult{Error: &TaskError{Message: "bad card", NonRetryable: true}}), Options{})
	if st.Status != StatusFailed || st.Error.Code != "JF2006" || st.Error.Path != "/nodes/task" {
		t.Fatalf("state %s %+v", st.Status, st.Error)
	}
	if s := only(t, eff, settledOf); s.Status != StatusFailed {
		t.Fatalf("settled %+v", s)
	}
}

func TestWaitTimerAndBufferedEvent(t *testing.T) {
	t.Parallel()
	wf := compile(t, waitDoc)
	st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r1", Time: 1000}, Options{})
	inv := only(t, eff, invokeOf)
	// The event arrives while the task runs: it waits for the wait.
	st, eff = step(t, wf, st, Message{Kind: KindEvent, Time: 1500, Event: &Event{Type: "go", Payload: 1.0, HasPayload: true}}, Options{})
	if len(eff) != 0 || len(st.Buffered) != 1 {
		t.Fatalf("buffered event: %+v %+v", st.Buffered, eff)
	}
	st, _ = step(t, wf, st, answer(inv, ok(nil)), Options{})
	if st.Status != StatusDone || st.Control.Active[0] != "/states/done" || st.Context.Event.Payload != 1.0 {
		t.Fatalf("state %s at %v", st.Status, st.Control.Active)
	}

	// Without the event the timer fires at its deadline, counted from
	// when the wait was entered.
	st, eff = step(t, wf, nil, Message{Kind: KindStart, RunID: "r2", Time: 1000}, Options{})
	inv = only(t, eff, invokeOf)
	st, eff = step(t, wf, st, Message{Kind: KindResult, Time: 2000, Result: &TaskResult{Activation: inv.Activation, Node: "task", Attempt: 1}}, Options{})
	arm := only(t, eff, armOf)
	if st.Status != StatusWaiting || arm.Deadline != 7000 {
		t.Fatalf("waiting %s, timer %+v", st.Status, arm)
	}
	st, _ = step(t, wf, st, Message{Kind: KindTimer, Time: 7000.2, Timer: &TimerFire{ID: arm.ID, Deadline: arm.Deadline}}, Options{})
	if st.Status != StatusDone || st.Control.Active[0] != "/states/late" {
		t.Fatalf("after the timer: %s at %v", st.Status, st.Control.Active)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	wf := compile(t, waitDoc)
	st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r1", Time: 1}, Options{})
	inv := only(t, eff, invokeOf)
	st, eff = step(t, wf, st, Message{Kind: KindCancel, Time: 2}, Options{})
	if st.Status != StatusCancelled || only(t, eff, settledOf).Status != StatusCancelled {
		t.Fatalf("status %s", st.Status)
	}
	if _, _, err := apply(wf, st, answer(inv, ok(1.0)), Options{}); !errors.Is(err, ErrRejected) {
		t.Fatalf("a result after cancel: %v", err)
	}
}

// TestReplayIsDeterministic applies one history twice, through the stored
// form, and gets the same bytes and the same effect ids.
func TestReplayIsDeterministic(t *testing.T) {
	t.Parallel()
	wf := compile(t, oneTask)
	play := func() ([]byte, []string) {
		var ids []string
		st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r1", Input: 1.0, Time: 1}, Options{})
		for _, e := range eff {
			ids = append(ids, e.ID)
		}
		data, err := Encode(st)
		if err != nil {
			t.Fatal(err)
		}
		st, err = Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		st, eff = step(t, wf, st, answer(only(t, eff, invokeOf), failed("x")), Options{})
		for _, e := range eff {
			ids = append(ids, e.ID)
		}
		data, err = Encode(st)
		if err != nil {
			t.Fatal(err)
		}
		return data, ids
	}
	a, ida := play()
	b, idb := play()
	if string(a) != string(b) || strings.Join(ida, ",") != strings.Join(idb, ",") {
		t.Fatalf("replay differs:\n%s\n%s", a, b)
	}
	if !strings.HasPrefix(ida[0], "r1/1/") {
		t.Fatalf("effect id %q", ida[0])
	}
}

func TestSnapshotIsTheReferenceShape(t *testing.T) {
	t.Parallel()
	wf := compile(t, oneTask)
	st, _ := step(t, wf, nil, Message{Kind: KindStart, RunID: "r1", Input: 1.0, Time: 1}, Options{})
	snap := value.MustCanonical(st.Snapshot(wf))
	for _, want := range []string{`"format":"jaren-workflow-run/0.1"`, `"pending":{"identity":{`, `"status":"running"`, `"visits":{"/states/a":1}`} {
		if !strings.Contains(snap, want) {
			t.Errorf("snapshot lacks %s: %s", want, snap)
		}
	}
}

// FuzzApply restores arbitrary stored states and applies a message: no
// input may panic the reducer.
func FuzzApply(f *testing.F) {
	wf := compile(f, waitDoc)
	st, _, err := Apply(wf, nil, Message{Kind: KindStart, RunID: "r1", Time: 1}, Options{})
	if err != nil {
		f.Fatal(err)
	}
	seed, err := Encode(st)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed, "event", "go", 5.0)
	f.Add([]byte(`{"runId":"r","status":"waiting","control":{"active":["/states/w"]},"context":{"results":{},"visits":{}}}`), "timer", "t1", 1.0)
	// Failed states a redrive meets: in a work state with a kept value
	// and a stale base, and outside any work state.
	f.Add([]byte(`{"runId":"r","status":"failed","error":{"code":"JF2006"},"control":{"active":["/states/a"]},"context":{"results":{},"visits":{"/states/a":1}},"pending":{"state":"/states/a","visit":1,"values":{}},"kept":{"task":1}}`), "redrive", "", 2.0)
	f.Add([]byte(`{"runId":"r","status":"failed","error":{"code":"JF2016"},"control":{"active":["/states/w"]},"context":{"results":{},"visits":{}}}`), "redrive", "", 2.0)
	f.Add([]byte(`{"runId":"r","status":"running","control":{"active":["/states/a"]},"context":{"results":{},"visits":{}},"pending":{"state":"/states/a","visit":1,"values":{}},"work":{"activation":"x","values":{},"running":{"task":{"attempt":9}},"base":8}}`), "result", "x", 3.0)
	f.Fuzz(func(t *testing.T, data []byte, kind, arg string, now float64) {
		st, err := Decode(data)
		if err != nil {
			return
		}
		msg := Message{
			Kind: Kind(kind), Time: now, Event: &Event{Type: arg}, Timer: &TimerFire{ID: arg, Deadline: now},
			Result: &TaskResult{Activation: arg, Node: "task", Attempt: 1},
		}
		_, _, _ = Apply(wf, st, msg, Options{})
		// Tight budgets and buffers: a rejection leaves no state, and a
		// run never takes a third event while it is not waiting.
		tight := Options{Steps: 50, Bytes: 1 << 10, MaxBuffered: 2, MaxBufferedBytes: 64}
		next, _, err := Apply(wf, st, msg, tight)
		if err != nil && next != nil {
			t.Fatalf("an error (%v) with a state", err)
		}
		if next != nil && next.Status != StatusWaiting && len(next.Buffered) > max(2, len(st.Buffered)) {
			t.Fatalf("%d events buffered, the limit is 2", len(next.Buffered))
		}
	})
}

// TestEarlyTimersAreRefused: a timer fire long before its deadline was not
// produced by the scheduler (which is never early) and must not cut a wait
// or a retry backoff short.
func TestEarlyTimersAreRefused(t *testing.T) {
	t.Parallel()
	wf := compile(t, waitDoc)
	st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r1", Time: 1000}, Options{})
	inv := only(t, eff, invokeOf)
	slow := Options{Retry: func(string, string) RetryPolicy { return RetryPolicy{MaxAttempts: 3, InitialIntervalMs: 20000} }}
	retried, eff := step(t, wf, st, answer(inv, failed("flaky")), slow)
	retry := only(t, eff, armOf)
	early := Message{Kind: KindTimer, Time: retried.Control.Time, Timer: &TimerFire{ID: retry.ID, Deadline: retry.Deadline}}
	if _, _, err := Apply(wf, retried, early, slow); !errors.Is(err, ErrRejected) {
		t.Errorf("an early retry fire: %v", err)
	}
	moved := Message{Kind: KindTimer, Time: retry.Deadline, Timer: &TimerFire{ID: retry.ID, Deadline: retry.Deadline - 1}}
	if _, _, err := Apply(wf, retried, moved, slow); !errors.Is(err, ErrRejected) {
		t.Errorf("a retry fire with another deadline: %v", err)
	}

	waiting, eff := step(t, wf, st, answer(inv, ok(nil)), Options{})
	arm := only(t, eff, armOf)
	early = Message{Kind: KindTimer, Time: arm.Deadline - MaxTimerSkewMs - 1, Timer: &TimerFire{ID: arm.ID, Deadline: arm.Deadline}}
	if _, _, err := Apply(wf, waiting, early, Options{}); !errors.Is(err, ErrRejected) {
		t.Errorf("an early wait timer: %v", err)
	}
	skewed := Message{Kind: KindTimer, Time: arm.Deadline - 500, Timer: &TimerFire{ID: arm.ID, Deadline: arm.Deadline}}
	if done, _ := step(t, wf, waiting, skewed, Options{}); done.Control.Active[0] != "/states/late" || done.Control.Time != arm.Deadline {
		t.Errorf("a fire within clock skew: %v at %v", done.Control.Active, done.Control.Time)
	}
}
