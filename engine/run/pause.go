package run

import (
	"strconv"

	"github.com/jetflow/jetflow/engine/workflow"
)

// An operator may pause a run, resume it, or terminate it. A paused run
// applies nothing: every event, result and timer fire that arrives is
// held, in arrival order and with its own time, in the run's state, so
// that no task is invoked and no timer fires until it is resumed. Resume
// applies the held inputs in order, each at its own time, so that a timer
// that came due meanwhile fires at once and a result that came before an
// attempt's deadline fire still counts. Terminate ends a run at once,
// paused or not, running nothing (no catch).

// Operator message kinds (besides KindCancel).
const (
	KindPause     Kind = "pause"
	KindResume    Kind = "resume"
	KindTerminate Kind = "terminate"
)

// Statuses an operator sets. Paused is not terminal: it ends with a
// resume, a cancel or a terminate. Terminated is.
const (
	StatusPaused     Status = "paused"
	StatusTerminated Status = "terminated"
)

// Paused is the mark of a paused run.
type Paused struct {
	// Since is when the pause was applied (ms).
	Since float64 `json:"since"`
	// Was is the status the run had, and gets back at resume.
	Was      Status `json:"was"`
	Reason   string `json:"reason,omitempty"`
	Operator string `json:"operator,omitempty"`
}

// Termination is why and when an operator ended a run.
type Termination struct {
	Time     float64 `json:"time"`
	Reason   string  `json:"reason"`
	Operator string  `json:"operator,omitempty"`
}

// Held is one input a paused run keeps for its resume.
type Held struct {
	Kind   Kind        `json:"kind"`
	Time   float64     `json:"time"`
	Event  *Event      `json:"event,omitempty"`
	Result *heldResult `json:"result,omitempty"`
	Timer  *heldTimer  `json:"timer,omitempty"`
	// Postpone is a held postpone (postpone.go).
	Postpone *Postpone `json:"postpone,omitempty"`
}

type heldResult struct {
	Activation string `json:"activation"`
	Node       string `json:"node"`
	Attempt    int    `json:"attempt"`
	// Output is as its worker wrote it (keptValue).
	Output *keptValue `json:"output,omitempty"`
	Error  *heldError `json:"error,omitempty"`
}

type heldError struct {
	Message      string  `json:"message"`
	Code         string  `json:"code,omitempty"`
	NonRetryable bool    `json:"nonRetryable,omitempty"`
	RetryAfterMs float64 `json:"retryAfterMs,omitempty"`
}

type heldTimer struct {
	ID       string  `json:"id"`
	Deadline float64 `json:"deadline"`
}

// hold turns an input into its held form.
func hold(msg Message, at float64) Held {
	h := Held{Kind: msg.Kind, Time: at}
	switch {
	case msg.Event != nil:
		e := *msg.Event
		h.Event = &e
	case msg.Result != nil:
		res := msg.Result
		h.Result = &heldResult{Activation: res.Activation, Node: res.Node, Attempt: res.Attempt}
		if res.Output != nil {
			h.Result.Output = &keptValue{res.Output}
		}
		if res.Error != nil {
			h.Result.Error = &heldError{Message: res.Error.Message, Code: res.Error.Code, NonRetryable: res.Error.NonRetryable, RetryAfterMs: res.Error.RetryAfterMs}
		}
	case msg.Timer != nil:
		h.Timer = &heldTimer{ID: msg.Timer.ID, Deadline: msg.Timer.Deadline}
	case msg.Postpone != nil:
		p := *msg.Postpone
		h.Postpone = &p
	}
	return h
}

// message is the input a held one stands for.
func (h Held) message() Message {
	m := Message{Kind: h.Kind, Time: h.Time, Event: h.Event, Postpone: h.Postpone}
	if h.Result != nil {
		m.Result = &TaskResult{Activation: h.Result.Activation, Node: h.Result.Node, Attempt: h.Result.Attempt, Output: h.Result.Output.value()}
		if h.Result.Error != nil {
			m.Result.Error = &TaskError{Message: h.Result.Error.Message, Code: h.Result.Error.Code, NonRetryable: h.Result.Error.NonRetryable, RetryAfterMs: h.Result.Error.RetryAfterMs}
		}
	}
	if h.Timer != nil {
		m.Timer = &TimerFire{ID: h.Timer.ID, Deadline: h.Timer.Deadline}
	}
	return m
}

func (h Held) size() int {
	n := len(h.Kind) + 24
	switch {
	case h.Event != nil:
		n += eventSize(h.Event)
	case h.Result != nil:
		n += len(h.Result.Activation) + len(h.Result.Node) + jsonSize(h.Result.Output.value())
		if h.Result.Error != nil {
			n += len(h.Result.Error.Message) + len(h.Result.Error.Code)
		}
	case h.Timer != nil:
		n += len(h.Timer.ID) + 24
	}
	return n
}

// operate applies a pause, resume or terminate, or holds an input that
// reached a paused run. handled is false for an input a run that is not
// paused applies as usual.
func operate(wf *workflow.Workflow, st *State, msg Message, opts Options) (next *State, effects []Effect, handled bool, err error) {
	switch msg.Kind {
	case KindPause:
		next, effects, err = pause(wf, st, msg, opts)
		return next, effects, true, err
	case KindResume:
		if st.Status != StatusPaused {
			return nil, nil, true, reject("run %q is %s, not paused: there is nothing to resume", st.RunID, st.Status)
		}
		next, effects, err = release(wf, st, msg, opts)
		return next, effects, true, err
	case KindTerminate:
		r := newReducer(wf, st, msg, opts)
		r.st.Status = StatusTerminated
		r.st.Terminated = &Termination{Time: r.now, Reason: msg.Reason, Operator: msg.Operator}
		r.st.Paused, r.st.Held = nil, nil
		r.st.Work = nil
		r.st.Buffered = nil
		next, effects, err = r.finish()
		return next, effects, true, err
	case KindCancel:
		return nil, nil, false, nil
	}
	if st.Status != StatusPaused {
		return nil, nil, false, nil
	}
	// A paused run keeps what it is sent for its resume.
	r := newReducer(wf, st, msg, opts)
	at := r.now
	if n := len(st.Held); n > 0 && st.Held[n-1].Time > at {
		at = st.Held[n-1].Time // stream time may step back; held times must not
	}
	h := hold(msg, at)
	if err := r.roomToHold(h); err != nil {
		return nil, nil, true, err
	}
	r.st.Held = append(r.st.Held, h)
	next, effects, err = r.finish()
	return next, effects, true, err
}

func pause(wf *workflow.Workflow, st *State, msg Message, opts Options) (*State, []Effect, error) {
	if st.Status == StatusPaused {
		return nil, nil, reject("run %q is already paused (since %s)", st.RunID, strconv.FormatFloat(st.Paused.Since, 'f', -1, 64))
	}
	if st.Status != StatusRunning && st.Status != StatusWaiting {
		return nil, nil, reject("run %q is %s and cannot be paused", st.RunID, st.Status)
	}
	r := newReducer(wf, st, msg, opts)
	r.st.Paused = &Paused{Since: r.now, Was: st.Status, Reason: msg.Reason, Operator: msg.Operator}
	r.st.Status = StatusPaused
	return r.finish()
}

// release resumes a paused run: the held inputs apply in order, each at
// its own time and with its own step (a refused one is noted in Ignored
// and skipped), then every timer the run relies on is armed again, so
// that one whose fire could not be held still fires (at once when due).
func release(wf *workflow.Workflow, st *State, msg Message, opts Options) (*State, []Effect, error) {
	r := newReducer(wf, st, msg, opts)
	r.st.Status = st.Paused.Was
	r.st.Paused = nil
	held := r.st.Held
	r.st.Held = nil
	cur := r.st
	var effects []Effect
	var ignored []Ignored
	for _, h := range held {
		m := h.message()
		if m.Time < cur.Control.Time {
			m.Time = cur.Control.Time
		}
		next, eff, err := Apply(wf, cur, m, opts)
		if err != nil {
			ignored = append(ignored, Ignored{Kind: m.Kind, Type: string(m.Kind), Reason: "held " + string(m.Kind) + " refused at resume: " + err.Error()})
			continue
		}
		ignored = append(ignored, next.Ignored...)
		cur = next
		for _, e := range eff {
			if e.Settled == nil {
				effects = append(effects, e)
			}
		}
	}
	cur.Ignored = ignored
	for _, t := range cur.Timers() {
		if !arms(effects, t) {
			effects = append(effects, Effect{Arm: &ArmTimer{ID: t.ID, Deadline: t.Deadline}})
		}
	}
	// One announcement: the run is no longer paused.
	effects = append(effects, Effect{Settled: cur.Announcement()})
	cur.Seq++
	prefix := cur.RunID + "/" + strconv.FormatInt(cur.Seq, 10) + "/"
	for i := range effects {
		effects[i].ID = prefix + strconv.Itoa(i)
	}
	return cur, effects, nil
}

// roomToHold rejects an input that would take the held inputs past
// Options.MaxBuffered or, with the buffered events, past
// Options.MaxBufferedBytes: a paused run's state must still fit its
// record.
func (r *reducer) roomToHold(h Held) error {
	limit, maxBytes := r.bufferLimits()
	if len(r.st.Held) >= limit {
		return reject("run %q is paused and already holds %d inputs for its resume, the limit (MaxBuffered); this %s is refused",
			r.st.RunID, len(r.st.Held), h.Kind)
	}
	size := h.size()
	for i := range r.st.Held {
		size += r.st.Held[i].size()
	}
	for i := range r.st.Buffered {
		size += eventSize(&r.st.Buffered[i])
	}
	if size > maxBytes {
		return reject("run %q is paused, and this %s would take what it holds for its resume to %d bytes, more than the limit of %d (MaxBufferedBytes)",
			r.st.RunID, h.Kind, size, maxBytes)
	}
	return nil
}

// arms reports whether effects arm t already (its last word on t.ID).
func arms(effects []Effect, t ArmTimer) bool {
	for i := len(effects) - 1; i >= 0; i-- {
		switch e := effects[i]; {
		case e.Arm != nil && e.Arm.ID == t.ID:
			return e.Arm.Deadline == t.Deadline
		case e.Disarm != nil && e.Disarm.ID == t.ID:
			return false
		}
	}
	return false
}

// Announcement is what the run's status announcement says of st.
func (st *State) Announcement() *Settled {
	s := &Settled{Status: st.Status, Error: st.Error}
	if len(st.Control.Active) > 0 {
		s.State = st.Control.Active[0]
	}
	if st.Status == StatusDone {
		s.Result = st.Context.Data
	}
	if st.Paused != nil {
		s.Since, s.Reason, s.Operator = st.Paused.Since, st.Paused.Reason, st.Paused.Operator
	}
	if st.Terminated != nil {
		s.Since, s.Reason, s.Operator = st.Terminated.Time, st.Terminated.Reason, st.Terminated.Operator
	}
	return s
}
