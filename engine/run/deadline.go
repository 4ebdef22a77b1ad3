package run

import (
	"math"
	"slices"
	"strconv"
)

// Timeouts bound a task's attempts. An attempt that has no accepted
// result by its deadline fails with CodeTaskTimeout and goes through the
// retry policy like any task error.
type Timeouts struct {
	// AttemptMs is how long one attempt may take from its invocation to
	// its accepted result; 0 is no limit.
	AttemptMs float64
	// ScheduleToCloseMs is how long all attempts of a node may take
	// together, from the first invocation; 0 is no limit. Its expiry is
	// never retried.
	ScheduleToCloseMs float64
}

// CodeTaskTimeout is the code of the task error an attempt fails with
// when its deadline passes without an accepted result: its worker died,
// gave it back until redelivery stopped, sent a result the dispatchers
// refused, or no worker serves the task.
const CodeTaskTimeout = "TASK_TIMEOUT"

// DeadlineTimer is the id of a run's deadline timer. A run has at most
// one, armed at the earliest deadline of its attempts in flight and
// re-armed as they change; fires are told apart by their deadline.
const DeadlineTimer = "d"

// setDeadline gives an attempt being invoked its deadline.
func (r *reducer) setDeadline(task, version string, a *Attempt) {
	if r.st.Work.ordinal(a) <= 1 || a.Scheduled == 0 {
		a.Scheduled = r.now
	}
	a.Deadline = 0
	if r.opts.Timeouts == nil {
		return
	}
	t := r.opts.Timeouts(task, version)
	if t.AttemptMs > 0 {
		a.Deadline = math.Round(r.now + t.AttemptMs)
	}
	if t.ScheduleToCloseMs > 0 {
		if end := math.Round(a.Scheduled + t.ScheduleToCloseMs); a.Deadline == 0 || end < a.Deadline {
			a.Deadline = end
		}
	}
}

// earliestDeadline is the first deadline of the attempts in flight (not
// waiting for a retry), 0 when none has one.
func (st *State) earliestDeadline() float64 {
	if st.Status.Terminal() || st.Work == nil {
		return 0
	}
	var first float64
	for _, a := range st.Work.Running {
		if !a.Waiting && a.Deadline > 0 && (first == 0 || a.Deadline < first) {
			first = a.Deadline
		}
	}
	return first
}

// syncDeadline arms, moves or drops the deadline timer so that it stands
// at the earliest deadline in flight.
func (r *reducer) syncDeadline() {
	want := r.st.earliestDeadline()
	if want == r.st.Deadline {
		return
	}
	if want == 0 {
		r.effects = append(r.effects, Effect{Disarm: &DisarmTimer{ID: DeadlineTimer}})
	} else {
		r.effects = append(r.effects, Effect{Arm: &ArmTimer{ID: DeadlineTimer, Deadline: want}})
	}
	r.st.Deadline = want
}

// deadlineTimer fails every attempt whose deadline has passed.
func (r *reducer) deadlineTimer(t *TimerFire) error {
	w := r.st.Work
	if w == nil || r.st.Deadline == 0 || t.Deadline != r.st.Deadline {
		return reject("deadline timer at %.0f is no longer armed", t.Deadline)
	}
	if !r.msg.NoTime && r.now < t.Deadline-MaxTimerSkewMs {
		return reject("deadline timer fired at %.0f, before its deadline %.0f", r.now, t.Deadline)
	}
	if r.now < t.Deadline {
		r.now = t.Deadline
	}
	if err := r.tick(); err != nil {
		return err
	}
	var due []string
	for node, a := range w.Running {
		if !a.Waiting && a.Deadline > 0 && a.Deadline <= r.now {
			due = append(due, node)
		}
	}
	slices.Sort(due)
	id := r.active()
	info := r.wf.DAGs[id]
	for _, node := range due {
		if r.st.Work != w {
			return nil // an earlier failure left the work state
		}
		a := w.Running[node]
		n, _ := info.Node(node)
		t := r.opts.Timeouts(n.Task, n.Version)
		closing := closes(a, t)
		err := &TaskError{
			Code: CodeTaskTimeout, Message: timeoutMessage(n.Task, n.Version, a, t, closing),
			// The node's schedule-to-close is over: no attempt can follow.
			NonRetryable: closing,
		}
		if err := r.taskFailed(id, node, a, err); err != nil {
			return err
		}
	}
	return nil
}

// closes reports whether an attempt's deadline is its node's
// schedule-to-close rather than its own attempt timeout.
func closes(a *Attempt, t Timeouts) bool {
	return t.ScheduleToCloseMs > 0 && a.Deadline == math.Round(a.Scheduled+t.ScheduleToCloseMs)
}

func timeoutMessage(task, version string, a *Attempt, t Timeouts, closing bool) string {
	which, limit := "attemptTimeout", t.AttemptMs
	if closing {
		which, limit = "scheduleToClose", t.ScheduleToCloseMs
	}
	return "task " + task + "@" + version + " attempt " + strconv.Itoa(a.Attempt) +
		" had no accepted result within its " + which + " of " + durationText(limit)
}

// durationText writes milliseconds as Go prints a duration, for the
// common whole values (the engine has no time package).
func durationText(ms float64) string {
	switch {
	case ms >= 3600000 && math.Mod(ms, 3600000) == 0:
		return strconv.FormatFloat(ms/3600000, 'f', -1, 64) + "h"
	case ms >= 60000 && math.Mod(ms, 60000) == 0:
		return strconv.FormatFloat(ms/60000, 'f', -1, 64) + "m"
	case ms >= 1000 && math.Mod(ms, 1000) == 0:
		return strconv.FormatFloat(ms/1000, 'f', -1, 64) + "s"
	}
	return strconv.FormatFloat(ms, 'f', -1, 64) + "ms"
}
