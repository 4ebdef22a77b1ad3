package run

import "testing"

// TestRetryAfter: a failure whose worker asks to retry after a delay
// waits exactly that long (capped at MaxRetryAfterMs), and the backoff of
// the failures after it starts where it would have without it; the
// attempts it takes still count against maxAttempts.
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	wf := compile(t, oneTask)
	opts := Options{Retry: func(string, string) RetryPolicy {
		return RetryPolicy{MaxAttempts: 4, InitialIntervalMs: 1000, MaxIntervalMs: 60000, Multiplier: 2}
	}}
	st, eff := step(t, wf, nil, Message{Kind: KindStart, RunID: "r1", Input: 1.0, Time: 1000}, opts)
	inv := only(t, eff, invokeOf)
	retry := func(res *TaskResult) float64 {
		t.Helper()
		var arm *ArmTimer
		st, eff = step(t, wf, st, answer(inv, res), opts)
		arm = only(t, eff, armOf)
		delay := arm.Deadline - st.Control.Time
		st, eff = step(t, wf, st, Message{Kind: KindTimer, Time: arm.Deadline, Timer: &TimerFire{ID: arm.ID, Deadline: arm.Deadline}}, opts)
		inv = only(t, eff, invokeOf)
		return delay
	}
	if d := retry(&TaskResult{Error: &TaskError{Message: "429", RetryAfterMs: 30000}}); d != 30000 {
		t.Fatalf("retry after 30s waited %v ms", d)
	}
	// The first backoff (1 s with jitter), not the second: the deferred
	// failure does not count.
	if d := retry(failed("boom")); d < 500 || d > 1000 {
		t.Fatalf("backoff after a deferred failure %v ms, want the first backoff (500 to 1000)", d)
	}
	if d := retry(&TaskResult{Error: &TaskError{Message: "429", RetryAfterMs: 1e12}}); d != MaxRetryAfterMs {
		t.Fatalf("a huge retry-after waited %v ms, want the cap %v", d, MaxRetryAfterMs)
	}
	if inv.Attempt != 4 {
		t.Fatalf("attempt %d, want 4", inv.Attempt)
	}
	st, _ = step(t, wf, st, answer(inv, &TaskResult{Error: &TaskError{Message: "429", RetryAfterMs: 1000}}), opts)
	if st.Status != StatusDone || st.Control.Active[0] != "/states/oops" {
		t.Fatalf("after the last attempt: %s at %v, want caught", st.Status, st.Control.Active)
	}
}
