package run

import (
	"strconv"

	"github.com/jetflow/jetflow/engine/workflow"
)

// A reset takes a run back to the state it had after one of its earlier
// inputs and continues from there. The host rebuilds that state from the
// run's own history (the reducer sees no history) and hands it to Reset
// with the run as it is now. What the run did since is superseded: its
// results, events and fires no longer count. What the old state had in
// flight runs again, numbered above every attempt the run ever made, so
// that a late result of a superseded attempt is refused even with its
// valid token; the timers the old state relied on are armed again, and
// those the run armed since are disarmed.

// KindReset is an operator's reset of a run to an earlier state (Reset).
// It is never passed to Apply.
const KindReset Kind = "reset"

// Reset applies a reset message: at is the state the run had after the
// input the reset names, cur the state now; the result is at, continued
// at msg.Time. Counters that name effects and timers (Seq, the retry
// timers, the chart's timer serial) continue from cur, so that nothing
// the run sends after the reset shares an id with what it sent before.
// It refuses (ErrRejected) a run that is paused now, and a point at
// which the run had settled or was paused: there is nothing there to
// continue from.
func Reset(wf *workflow.Workflow, cur, at *State, msg Message, opts Options) (*State, []Effect, error) {
	switch {
	case cur == nil || at == nil:
		return nil, nil, reject("no such run")
	case cur.Status == StatusPaused:
		return nil, nil, reject("run %q is paused: resume it first (a reset would drop the inputs it holds)", cur.RunID)
	case at.Status.Terminal():
		return nil, nil, reject("run %q had already %s at that point: a reset continues from a point at which the run had not settled (pick an earlier input)", cur.RunID, settledVerb(at.Status))
	case at.Status == StatusPaused:
		return nil, nil, reject("run %q was paused at that point: a reset continues from a point at which the run ran (pick the input before its pause, or after its resume)", cur.RunID)
	}
	if !msg.NoTime && (msg.Time != msg.Time || msg.Time < cur.Control.Time) {
		return nil, nil, reject("a reset's time %s is before the run's time %s", strconv.FormatFloat(msg.Time, 'f', -1, 64), strconv.FormatFloat(cur.Control.Time, 'f', -1, 64))
	}
	r := newReducer(wf, at, msg, opts)
	st := r.st
	st.Seq = cur.Seq + 1
	st.Retries = max(st.Retries, cur.Retries)
	st.Control.Serial = max(st.Control.Serial, cur.Control.Serial)
	st.Redrives, st.Resets = cur.Redrives, cur.Resets+1
	st.AttemptFloor = cur.Seq
	// The deadline timer as it stands now: finish moves or drops it.
	st.Deadline = cur.Deadline
	st.Error, st.Kept, st.Terminated = nil, nil, nil
	if st.Work != nil {
		// Every task node of the activation that was in flight, or waiting
		// for a retry, is invoked again, as a redrive does; those that
		// had succeeded keep their values.
		r.redriven = &redriven{base: int(cur.Seq), kept: r.keep()}
		st.Work = nil
	}
	st.Status = StatusRunning
	err := r.resume()
	if err == nil {
		err = r.drive()
	}
	if err != nil {
		r.fail(err)
	}
	// Arm every timer the state relies on, not only those it armed now,
	// and announce the status even if it is the one the run had then.
	r.serial, r.status = 0, ""
	r.disarmSuperseded(cur)
	return r.finish()
}

// disarmSuperseded drops the timers cur relies on that the reset state
// does not arm (the deadline timer is finish's to move).
func (r *reducer) disarmSuperseded(cur *State) {
	armed := map[string]bool{}
	for _, e := range r.effects {
		if e.Arm != nil {
			armed[e.Arm.ID] = true
		}
	}
	if r.st.Status == StatusWaiting {
		for _, t := range r.st.Control.Timers {
			armed["t"+strconv.FormatInt(t.Token, 10)] = true
		}
	}
	for _, t := range cur.Timers() {
		if t.ID != DeadlineTimer && !armed[t.ID] {
			r.effects = append(r.effects, Effect{Disarm: &DisarmTimer{ID: t.ID}})
		}
	}
}

func settledVerb(s Status) string {
	switch s {
	case StatusDone:
		return "finished (done)"
	case StatusFailed:
		return "failed"
	case StatusCancelled:
		return "been cancelled"
	case StatusTerminated:
		return "been terminated"
	}
	return string(s)
}
