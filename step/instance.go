package step

import (
	"maps"
	"strconv"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// A schedule is one message per subject, and an outbox can be published
// after the run has moved past it: a dispatcher flushes the record it
// loaded before its compare-and-swap, and that record can be stale (a
// replica that lags, a race it is about to lose), while the duplicate
// window that would drop the repeat is rebuilt by a restarted server or
// a new stream leader only from the messages it still stores. Were a
// timer's schedule on one subject for good, such a late arm would replace
// the timer's later arm (it fires at the old time, is rejected, and the
// new time never comes) and a late disarm would erase it. So each arming
// of a timer gets a subject of its own, named by the step that armed it,
// and the record remembers it (Record.Armed) so that a disarm or a re-arm
// names that instance. A late arm then only brings back an old instance,
// whose fire the reducer rejects unless it is the timer it waits for at
// that very deadline; a late disarm only removes an old instance. The
// server's own purge of a fired schedule (a fire purges its schedule's
// subject when it is stored) likewise reaches no later arming.

// placeTimers puts the outbox's arms and disarms on the subjects of their
// instances: an arm on a new instance of the step seq, after a disarm of
// the timer's pending instance if it has one; a disarm on the pending
// instance. It returns the outbox and the armed instances the run may
// still rely on. A timer armed before instances existed (no entry in
// armed) keeps its old subject (subjects.Names.Schedule): a disarm goes
// there as it did, and an arm that replaces a timer prev relied on
// disarms it there first.
//
// fired is the schedule subject of the fire the step applies ("" for any
// other input). loose reports that the step dropped an instance that was
// neither that fire's nor disarmed: it may still be pending
// (Record.Tracked).
func placeTimers(names subjects.Names, runID, fired string, armed map[string]int64, prev, next *run.State, out []runrecord.Outgoing) (placed []runrecord.Outgoing, _ map[string]int64, loose bool) {
	// legacy: the timers whose pending schedule may be on the old
	// subject, until this outbox disarms it there.
	before := armed
	legacy := func(id string) bool { _, ok := before[id]; return !ok && relies(prev, id) }
	done := map[string]bool{}
	armed = maps.Clone(armed)
	placed = make([]runrecord.Outgoing, 0, len(out))
	for _, o := range out {
		id := o.Header[wire.HeaderTimer]
		switch o.Kind {
		case runrecord.OutTimer:
			if old, ok := armed[id]; ok && old != next.Seq {
				placed = append(placed, disarm(names, runID, o.ID+"/disarm", id, names.ScheduleInstance(runID, timerToken(id), itoa(old))))
			} else if !ok && !done[id] && legacy(id) {
				placed = append(placed, disarm(names, runID, o.ID+"/disarm", id, names.Schedule(runID, timerToken(id))))
			}
			done[id] = true
			if armed == nil {
				armed = map[string]int64{}
			}
			armed[id] = next.Seq
			o.Subject = names.ScheduleInstance(runID, timerToken(id), itoa(next.Seq))
		case runrecord.OutDisarm:
			if old, ok := armed[id]; ok {
				o.Subject = names.ScheduleInstance(runID, timerToken(id), itoa(old))
				delete(armed, id)
			}
			done[id] = true
		}
		placed = append(placed, o)
	}
	maps.DeleteFunc(armed, func(id string, inst int64) bool {
		if relies(next, id) {
			return false
		}
		loose = loose || fired == "" || fired != names.ScheduleInstance(runID, timerToken(id), itoa(inst))
		return true
	})
	if len(armed) == 0 {
		armed = nil
	}
	return placed, armed, loose
}

// relies reports whether a run in state st may still take a fire of the
// timer id: its deadline timer while an attempt has a deadline, a retry
// timer while its node waits for it, a chart timer while the state that
// armed it is active. A paused run keeps them all (its resume arms them
// again). A timer it no longer relies on may still fire; the reducer
// rejects that fire.
func relies(st *run.State, id string) bool {
	if st == nil || st.Status.Terminal() {
		return false
	}
	if id == run.DeadlineTimer {
		return st.Deadline > 0
	}
	if st.Work != nil {
		if _, ok := st.Work.Retries[id]; ok {
			return true
		}
	}
	for _, t := range st.Control.Timers {
		if "t"+strconv.FormatInt(t.Token, 10) == id {
			return true
		}
	}
	return false
}

func disarm(names subjects.Names, runID, msgID, timerID, subject string) runrecord.Outgoing {
	o := renderDisarm(names, runID, msgID, &run.DisarmTimer{ID: timerID})
	o.Subject = subject
	return o
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
