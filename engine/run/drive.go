package run

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/statechart"
	"github.com/jetflow/jetflow/engine/workflow"
)

// resume is the start of a reference call on a saved snapshot: time moves
// to now (a computation steps its clock; a wait keeps its deadlines for
// drive), and the call claims a generation.
func (r *reducer) resume() error {
	if !r.msg.NoTime && r.st.Status != StatusDone && r.wf.Spec(r.active()).Kind != workflow.KindOn {
		res, err := r.wf.Chart.Step(r.st.Control, workflow.EventClock, r.clockOpts())
		if err != nil {
			return err
		}
		r.st.Control = res.State
	}
	r.persist()
	return nil
}

func (r *reducer) wake() error {
	if r.st.Status != StatusWaiting {
		return reject("run %q is not waiting", r.st.RunID)
	}
	return r.wakeUp()
}

// MaxTimerSkewMs is how much earlier than its deadline a timer fire's
// time may be. Stream time comes from whichever server leads the stream,
// whose clock may trail the one that armed the timer; a fire any earlier
// was not produced by the scheduler (which never fires early) and is
// refused, so that no publisher can cut a wait short.
const MaxTimerSkewMs = 2000

func (r *reducer) timer(t *TimerFire) error {
	if t == nil {
		return reject("a timer message needs a timer id")
	}
	if t.ID == DeadlineTimer {
		return r.deadlineTimer(t)
	}
	if isRetryTimer(t.ID) {
		return r.retryTimer(t)
	}
	if r.st.Status != StatusWaiting || !r.armed(t.ID, t.Deadline) {
		return reject("timer %q is no longer armed", t.ID)
	}
	if !r.msg.NoTime && r.now < t.Deadline-MaxTimerSkewMs {
		return reject("timer %q fired at %.0f, before its deadline %.0f", t.ID, r.now, t.Deadline)
	}
	// A scheduled message is never early, but its stream time may trail
	// the deadline by clock skew: the logical time is at least the deadline.
	if r.now < t.Deadline {
		r.now = t.Deadline
	}
	return r.wakeUp()
}

func (r *reducer) armed(id string, deadline float64) bool {
	for _, t := range r.st.Control.Timers {
		if "t"+itoa(t.Token) == id && t.At == deadline {
			return true
		}
	}
	return false
}

func (r *reducer) wakeUp() error {
	r.st.Status = StatusRunning
	if err := r.resume(); err != nil {
		return err
	}
	return r.drive()
}

// drive runs the reference's loop until the run waits, settles, or has
// tasks in flight.
func (r *reducer) drive() error {
	for r.st.Status != StatusDone {
		id := r.active()
		spec := r.wf.Spec(id)
		switch spec.Kind {
		case workflow.KindWork:
			blocked, err := r.work(id)
			if err != nil || blocked {
				return err
			}
		case workflow.KindChoose:
			res, err := r.wf.Chart.Step(r.st.Control, workflow.EventNext, r.stepOpts(r.contextValue(), nil))
			if err != nil {
				return err
			}
			if len(res.Errors) == 0 && !res.Changed {
				return fault.NoPath(fault.JF2016, "choice did not select a transition")
			}
			if err := r.apply(res, nil); err != nil {
				return err
			}
		case workflow.KindOn:
			waiting, err := r.wait()
			if err != nil || waiting {
				return err
			}
		default:
			return fault.NoPath(fault.JF2016, "unexpected active workflow state '"+id+"'")
		}
	}
	return nil
}

// wait is the reference's on-state step: a due timer first, then the next
// event; with neither, the run waits.
func (r *reducer) wait() (waiting bool, err error) {
	if !r.msg.NoTime {
		res, err := r.wf.Chart.Advance(r.st.Control, r.now, statechart.AdvanceOptions{Context: r.contextValue(), One: true, Budget: &r.budget})
		if err != nil {
			return false, err
		}
		if err := r.apply(res, nil); err != nil {
			return false, err
		}
		if res.Changed {
			return false, nil
		}
	}
	for len(r.st.Buffered) > 0 {
		ev := r.st.Buffered[0]
		r.st.Buffered = r.st.Buffered[1:]
		res, err := r.wf.Chart.Step(r.st.Control, workflow.EventPrefix+ev.Type, r.stepOpts(r.contextValue(), ev.Payload))
		if err != nil {
			return false, err
		}
		if err := r.apply(res, func() {
			if res.Changed {
				r.st.Context.Event = &ev
			}
		}); err != nil {
			return false, err
		}
		if res.Changed {
			return false, nil
		}
		r.ignore(ev)
	}
	r.persist()
	r.st.Status = StatusWaiting
	return true, nil
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// ignore notes an event the wait consumed without a transition, with a
// reason a person who mistyped an event type can act on.
func (r *reducer) ignore(ev Event) {
	id := r.active()
	var awaited []string
	known := false
	for _, w := range r.wf.Spec(id).On {
		known = known || w.Event == ev.Type
		if !slices.Contains(awaited, w.Event) {
			awaited = append(awaited, w.Event)
		}
	}
	reason := fmt.Sprintf("event %q matched no transition: the run waits in %s for %s", ev.Type, id, quoted(awaited))
	if known {
		reason = fmt.Sprintf("event %q matched no transition: the run waits in %s, and no guard of its branches for %q held", ev.Type, id, ev.Type)
	}
	r.st.Ignored = append(r.st.Ignored, Ignored{Type: ev.Type, Reason: reason})
}

func quoted(events []string) string {
	if len(events) == 0 {
		return "no event (only its timer)"
	}
	q := make([]string, len(events))
	for i, e := range events {
		q[i] = strconv.Quote(e)
	}
	return strings.Join(q, ", ")
}
