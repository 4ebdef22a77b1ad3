package run

import (
	"errors"
	"strings"
	"testing"
)

// fanDoc runs x (no checkpoint), c (checkpoint) and y side by side and
// joins their outputs.
const fanDoc = `{"$workflow":"0.2","revision":"r1","initial":"a","states":{
 "a":{"work":{"dag":{"$dag":"0.1","nodes":{"in":{"kind":"input"},
   "x":{"kind":"task","run":"x","version":"1"},"c":{"kind":"task","run":"c","version":"1","checkpoint":true},
   "y":{"kind":"task","run":"y","version":"1"},
   "q":{"kind":"query","query":{"x":"$.x","c":"$.c","y":"$.y"}},"out":{"kind":"output"}},
   "edges":[{"from":"in","to":"x"},{"from":"in","to":"c"},{"from":"in","to":"y"},
    {"from":"x","to":"q","port":"x"},{"from":"c","to":"q","port":"c"},{"from":"y","to":"q","port":"y"},{"from":"q","to":"out"}]}},"then":"b"},
 "b":{"final":true}}}`

func redriveOpts(attempts int) Options {
	return Options{
		Retry: func(string, string) RetryPolicy {
			return RetryPolicy{MaxAttempts: attempts, InitialIntervalMs: 100, Multiplier: 2}
		},
		Timeouts: func(string, string) Timeouts { return Timeouts{AttemptMs: 60000} },
	}
}

func redriveMsg(at float64) Message {
	return Message{Kind: KindRedrive, Time: at, Reason: "worker fixed"}
}

func invokes(effects []Effect) map[string]*Invoke {
	out := map[string]*Invoke{}
	for _, e := range effects {
		if e.Invoke != nil {
			out[e.Invoke.Node] = e.Invoke
		}
	}
	return out
}

func TestRedriveInvokesOnlyTheFailedNodes(t *testing.T) {
	t.Parallel()
	wf := compile(t, fanDoc)
	opts := redriveOpts(1)
	st, effects := step(t, wf, nil, Message{Kind: KindStart, Time: 0, RunID: "r", Input: 1.0}, opts)
	first := invokes(effects)
	st, _ = step(t, wf, st, answer(first["x"], ok("X")), opts)
	st, _ = step(t, wf, st, answer(first["c"], ok("C")), opts)
	failedAt := st.Control.Time
	st, _ = step(t, wf, st, answer(first["y"], failed("boom")), opts)
	if st.Status != StatusFailed || st.Error.Code != "JF2006" || st.Deadline != 0 {
		t.Fatalf("after y failed: %s %+v deadline %v", st.Status, st.Error, st.Deadline)
	}
	if st.Kept["x"] != "X" || len(st.Kept) != 1 || st.Pending.Values["c"] != "C" {
		t.Fatalf("the failed state keeps %v and checkpoints %v, want x kept and c checkpointed", st.Kept, st.Pending.Values)
	}
	// A result of y's failed attempt is refused while the run is failed.
	if _, _, err := apply(wf, st, answer(first["y"], ok("late")), opts); !errors.Is(err, ErrRejected) {
		t.Fatalf("late result of a failed run: %v", err)
	}

	seq := st.Seq + 1
	st, effects = step(t, wf, st, redriveMsg(failedAt+5000), opts)
	again := invokes(effects)
	if st.Status != StatusRunning || st.Error != nil || st.Kept != nil || st.Redrives != 1 {
		t.Fatalf("after the redrive: %s %+v kept %v redrives %d", st.Status, st.Error, st.Kept, st.Redrives)
	}
	if len(again) != 1 || again["y"] == nil {
		t.Fatalf("the redrive invoked %v, want y alone", again)
	}
	y := again["y"]
	if y.Attempt != int(seq) || y.Attempt <= first["y"].Attempt || y.Activation != first["y"].Activation {
		t.Fatalf("redriven attempt %d of %s, want attempt %d of the same activation %s", y.Attempt, y.Activation, seq, first["y"].Activation)
	}
	if y.Deadline != failedAt+5000+60000 || st.Deadline != y.Deadline || armed(effects, DeadlineTimer) == nil {
		t.Fatalf("redriven attempt deadline %v, run deadline %v, effects %+v", y.Deadline, st.Deadline, effects)
	}
	if s := only(t, effects, settledOf); s.Status != StatusRunning {
		t.Fatalf("announced %s, want running", s.Status)
	}
	if err := st.Stranded(); err != nil {
		t.Fatal(err)
	}
	// The failed attempt's result stays refused after the redrive.
	if _, _, err := apply(wf, st, answer(first["y"], ok("late")), opts); !errors.Is(err, ErrRejected) {
		t.Fatalf("result of the failed attempt after the redrive: %v, want a rejection", err)
	}
	st, _ = step(t, wf, st, answer(y, ok("Y")), opts)
	want := map[string]any{"x": "X", "c": "C", "y": "Y"}
	got, _ := st.Context.Data.(map[string]any)
	if st.Status != StatusDone || got["x"] != want["x"] || got["c"] != want["c"] || got["y"] != want["y"] {
		t.Fatalf("after the redriven attempt: %s data %v, want done with %v", st.Status, st.Context.Data, want)
	}
}

func TestRedriveGivesAFreshRetryBudget(t *testing.T) {
	t.Parallel()
	wf := compile(t, `{"$workflow":"0.2","revision":"r1","initial":"a","states":{
	 "a":{"work":{"task":"inc","version":"1"},"then":"b"},"b":{"final":true}}}`)
	opts := redriveOpts(2)
	st, effects := step(t, wf, nil, Message{Kind: KindStart, Time: 0, RunID: "r", Input: 1.0}, opts)
	inv := only(t, effects, invokeOf)
	st, effects = step(t, wf, st, answer(inv, failed("one")), opts)
	st, effects = step(t, wf, st, retryFire(armed(effects, "r1")), opts)
	inv = only(t, effects, invokeOf)
	st, _ = step(t, wf, st, answer(inv, failed("two")), opts)
	if st.Status != StatusFailed {
		t.Fatalf("after two failures: %s", st.Status)
	}
	st, effects = step(t, wf, st, redriveMsg(st.Control.Time+1000), opts)
	inv = only(t, effects, invokeOf)
	base := inv.Attempt - 1
	if st.Work.Base != base || base < 2 {
		t.Fatalf("redriven attempt %d with base %d, want above the 2 earlier attempts", inv.Attempt, st.Work.Base)
	}
	// The first failure after the redrive is retried, after the policy's
	// first interval: the budget counts from the redrive.
	now := st.Control.Time + 10
	st, effects = step(t, wf, st, answer(inv, failed("three")), opts)
	retry := armed(effects, "r2")
	if st.Status != StatusRunning || retry == nil || retry.Deadline-now < 50 || retry.Deadline-now > 100 {
		t.Fatalf("first failure after the redrive: %s, retry %+v (now %v), want a retry within 50-100 ms", st.Status, retry, now)
	}
	st, effects = step(t, wf, st, retryFire(retry), opts)
	inv = only(t, effects, invokeOf)
	if inv.Attempt != base+2 {
		t.Fatalf("second attempt after the redrive is %d, want %d", inv.Attempt, base+2)
	}
	st, _ = step(t, wf, st, answer(inv, failed("four")), opts)
	if st.Status != StatusFailed || !strings.Contains(st.Error.Message, "four") {
		t.Fatalf("after the redriven budget: %s %+v", st.Status, st.Error)
	}
	// A second redrive numbers above the first one's attempts.
	st, effects = step(t, wf, st, redriveMsg(st.Control.Time+1000), opts)
	if again := only(t, effects, invokeOf); again.Attempt <= inv.Attempt || st.Redrives != 2 {
		t.Fatalf("second redrive: attempt %d after %d, redrives %d", again.Attempt, inv.Attempt, st.Redrives)
	}
}

func TestRedriveAfterATaskTimeout(t *testing.T) {
	t.Parallel()
	wf := compile(t, `{"$workflow":"0.2","revision":"r1","initial":"a","states":{
	 "a":{"work":{"task":"inc","version":"1"},"then":"b"},"b":{"final":true}}}`)
	opts := timeouts(1000, 0)
	opts.Retry = func(string, string) RetryPolicy { return NoRetry }
	st, _ := step(t, wf, nil, Message{Kind: KindStart, Time: 0, RunID: "r", Input: 1.0}, opts)
	st, _ = step(t, wf, st, deadlineFire(1000), opts)
	if st.Status != StatusFailed || !strings.Contains(st.Error.Message, "had no accepted result within its attemptTimeout") {
		t.Fatalf("after the deadline: %s %+v", st.Status, st.Error)
	}
	st, effects := step(t, wf, st, redriveMsg(5000), opts)
	inv := only(t, effects, invokeOf)
	if inv.Deadline != 6000 || st.Deadline != 6000 {
		t.Fatalf("redriven attempt deadline %v, run deadline %v, want 6000", inv.Deadline, st.Deadline)
	}
	if err := st.Stranded(); err != nil {
		t.Fatal(err)
	}
	st, _ = step(t, wf, st, answer(inv, ok(2.0)), opts)
	if st.Status != StatusDone {
		t.Fatalf("after the redriven result: %s", st.Status)
	}
}

func TestRedriveRefusals(t *testing.T) {
	t.Parallel()
	opts := redriveOpts(1)
	running := func(t *testing.T) (*State, *Invoke) {
		wf := compile(t, oneTask)
		st, effects := step(t, wf, nil, Message{Kind: KindStart, Time: 0, RunID: "r", Input: 5.0}, opts)
		return st, only(t, effects, invokeOf)
	}
	wf := compile(t, oneTask)
	st, inv := running(t)
	done, _ := step(t, wf, st, answer(inv, ok(1.0)), opts)
	cancelled, _ := step(t, wf, st, Message{Kind: KindCancel, Time: 5}, opts)
	for _, c := range []struct {
		name string
		st   *State
		want string
	}{
		{"running", st, `run "r" is running: only a failed run can be redriven`},
		{"done", done, `run "r" is done: only a failed run can be redriven`},
		{"cancelled", cancelled, `run "r" is cancelled: only a failed run can be redriven`},
	} {
		if _, _, err := Apply(wf, c.st, redriveMsg(100), opts); !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a rejection saying %q", c.name, err, c.want)
		}
	}
	// A guard that fails at run time: not a work activation.
	guard := compile(t, `{"$workflow":"0.2","revision":"r1","initial":"a","states":{
	 "a":{"work":{"task":"inc","version":"1"},"then":"c"},
	 "c":{"choose":[{"guard":{"$gt":[{"$div":[1,"$.context.data"]},2]},"to":"b"}],"otherwise":"b"},"b":{"final":true}}}`)
	st, effects := step(t, guard, nil, Message{Kind: KindStart, Time: 0, RunID: "r"}, opts)
	st, _ = step(t, guard, st, answer(only(t, effects, invokeOf), ok("text")), opts)
	if st.Status != StatusFailed {
		t.Fatalf("the guard did not fail: %s", st.Status)
	}
	if _, _, err := Apply(guard, st, redriveMsg(100), opts); !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "which is not a work state") {
		t.Errorf("failed guard: %v, want a refusal naming the state", err)
	}
}

func TestRedriveRefusesAVisitLimit(t *testing.T) {
	t.Parallel()
	wf := compile(t, `{"$workflow":"0.2","revision":"r1","initial":"a","states":{
	 "a":{"work":{"task":"inc","version":"1"},"then":"a","limit":1}}}`)
	opts := redriveOpts(1)
	st, effects := step(t, wf, nil, Message{Kind: KindStart, Time: 0, RunID: "r"}, opts)
	st, _ = step(t, wf, st, answer(only(t, effects, invokeOf), ok(1.0)), opts)
	if st.Status != StatusFailed || st.Error.Code != "JF2015" {
		t.Fatalf("status %s %+v, want failed on the visit limit", st.Status, st.Error)
	}
	if _, _, err := Apply(wf, st, redriveMsg(100), opts); !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "visit limit (JF2015)") {
		t.Fatalf("visit limit: %v, want a refusal", err)
	}
}

func TestFailedStateWithoutKeptValuesIsStoredAsBefore(t *testing.T) {
	t.Parallel()
	wf := compile(t, `{"$workflow":"0.2","revision":"r1","initial":"a","states":{
	 "a":{"work":{"task":"inc","version":"1"},"then":"b"},"b":{"final":true}}}`)
	opts := redriveOpts(1)
	st, effects := step(t, wf, nil, Message{Kind: KindStart, Time: 0, RunID: "r"}, opts)
	st, _ = step(t, wf, st, answer(only(t, effects, invokeOf), failed("boom")), opts)
	data, err := Encode(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"kept"`, `"redrives"`, `"base"`, `"work"`} {
		if strings.Contains(string(data), key) {
			t.Errorf("a failed single-task state stores %s: %s", key, data)
		}
	}
}

func TestRedriveOfAQueryErrorRunsItAgain(t *testing.T) {
	t.Parallel()
	// q divides by the task's output: a string fails at run time.
	wf := compile(t, `{"$workflow":"0.2","revision":"r1","initial":"a","states":{
	 "a":{"work":{"dag":{"$dag":"0.1","nodes":{"in":{"kind":"input"},
	   "x":{"kind":"task","run":"x","version":"1"},
	   "q":{"kind":"query","query":{"$div":[1,"$"]}},"out":{"kind":"output"}},
	   "edges":[{"from":"in","to":"x"},{"from":"x","to":"q"},{"from":"q","to":"out"}]}},"then":"b"},
	 "b":{"final":true}}}`)
	opts := redriveOpts(1)
	st, effects := step(t, wf, nil, Message{Kind: KindStart, Time: 0, RunID: "r"}, opts)
	st, _ = step(t, wf, st, answer(only(t, effects, invokeOf), ok("text")), opts)
	if st.Status != StatusFailed || st.Kept["x"] != "text" {
		t.Fatalf("after the query error: %s %+v kept %v", st.Status, st.Error, st.Kept)
	}
	code := st.Error.Code
	// The redrive is taken: x is kept, q runs again and fails the same way.
	next, effects := step(t, wf, st, redriveMsg(100), opts)
	if next.Status != StatusFailed || next.Error.Code != code || next.Redrives != 1 || len(invokes(effects)) != 0 || next.Kept["x"] != "text" {
		t.Fatalf("redriven query error: %s %+v redrives %d effects %+v", next.Status, next.Error, next.Redrives, effects)
	}
	if s := only(t, effects, settledOf); s.Status != StatusFailed {
		t.Fatalf("announced %s", s.Status)
	}
	if code != "JF2006" {
		t.Errorf("a DAG query error failed with %s, want JF2006 (docs/OPERATIONS.md)", code)
	}
	// A work input that fails at run time: no activation was made yet, and
	// the redrive evaluates the input again.
	input := compile(t, `{"$workflow":"0.2","revision":"r1","initial":"i","states":{
	 "i":{"work":{"task":"x","version":"1"},"input":{"$div":[1,"$.context.data"]},"then":"b"},"b":{"final":true}}}`)
	st, _ = step(t, input, nil, Message{Kind: KindStart, Time: 0, RunID: "r", Input: "text"}, opts)
	if st.Status != StatusFailed || st.Error.Code != "JF2016" || st.Pending != nil {
		t.Fatalf("after the input error: %s %+v pending %+v", st.Status, st.Error, st.Pending)
	}
	next, _ = step(t, input, st, redriveMsg(100), opts)
	if next.Status != StatusFailed || next.Error.Code != "JF2016" || next.Redrives != 1 {
		t.Fatalf("redriven input error: %s %+v", next.Status, next.Error)
	}
}
