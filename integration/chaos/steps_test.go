package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/token"
	"github.com/jetflow/jetflow/wire"
)

// replayer re-applies inputs as the dispatchers do: their default
// settings and the deployment's token secret.
func (h *harness) replayer(ctx context.Context) (*replay.Stepper, error) {
	signer, err := token.Load(ctx, h.f.JS, h.names)
	if err != nil {
		return nil, fmt.Errorf("load the token secret: %w", err)
	}
	return replay.NewStepper(h.f.Registry, step.Settings{Names: h.names, Tokens: signer}, run.Options{})
}

// checkSteps steps through the run's applied inputs and checks what the
// deadlines did: every state had a way forward, the chart's timers fired
// as a fault-free run's do, every failure given a retry timer was retried
// by one fire, every deadline fire ended an attempt, and every attempt a
// worker misbehaved on timed out. Attempts that timed out without a
// misbehaviour met a fault (a killed worker, an input held by a killed
// dispatcher, an election).
func (h *harness) checkSteps(ctx context.Context, c *runCheck, rp *replay.Stepper, r *runLog, history []input, rec *runrecord.Record, logs *workerLogs) {
	if rp == nil {
		return
	}
	s, err := stepRun(ctx, rp, r.id, history, rec)
	if err != nil {
		c.problem(r.id, "stepping through its applied inputs: %v", err)
		return
	}
	c.states = s.states
	for _, why := range s.stranded {
		c.stranded = true
		c.problem(r.id, "stranded %s", why)
	}
	if s.afterFires != r.wf.after {
		c.problem(r.id, "%d fires of after timers applied, want %d", s.afterFires, r.wf.after)
	}
	if s.retryFires != s.retried {
		c.problem(r.id, "%d failed attempts given a retry timer, %d retry fires applied: want one each", s.retried, s.retryFires)
	}
	if s.idleDeadlines > 0 {
		c.problem(r.id, "%d deadline fires applied that ended no attempt", s.idleDeadlines)
	}
	c.timedOut = len(s.timedOut)
	for _, k := range logs.byRun[r.id] {
		r.misbehaved++
		if s.timedOut[k] {
			c.timedOutMis++
			continue
		}
		if s.abandoned[k] {
			continue // its run failed meanwhile (and was redriven)
		}
		c.problem(r.id, "attempt %d of node %s (activation %s) was misbehaved on (%s) but did not time out",
			k.attempt, k.node, k.activation, logs.mis[k])
	}
}

// steps is what re-applying a run's inputs one at a time, in the order
// its record applied them, showed about the states in between: which
// attempts timed out, how many failures were retried, which timers fired,
// and whether every state the dispatchers saved had a way forward.
type steps struct {
	// timedOut are the attempts a deadline fire ended (TASK_TIMEOUT).
	timedOut map[attemptKey]bool
	// abandoned are the attempts in flight when their run failed: a
	// redrive invokes their nodes again, and they never time out.
	abandoned map[attemptKey]bool
	// retried counts the attempts that failed (an error result or a
	// timeout) and were given a retry timer: each must fire once.
	retried int
	// Timer fires applied, by the kind of timer: the chart's (after),
	// retry backoffs, and the deadline timer.
	afterFires, retryFires, deadlineFires int
	// idleDeadlines counts deadline fires applied that ended no attempt.
	idleDeadlines int
	// states is how many states were checked; stranded says, for each
	// that had no way forward (run.State.Stranded), why.
	states   int
	stranded []string
}

// stepRun re-applies the inputs rec lists as applied, in its order, with
// the dispatchers' own Replayer. Refused inputs change no state, so they
// are left out. The last state must be the saved one, or the figures
// would describe another run.
func stepRun(ctx context.Context, rp *replay.Stepper, runID string, history []input, rec *runrecord.Record) (*steps, error) {
	bySeq := make(map[uint64]input, len(history))
	for _, m := range history {
		bySeq[m.seq] = m
	}
	s := &steps{timedOut: map[attemptKey]bool{}, abandoned: map[attemptKey]bool{}}
	var cur step.Run
	for _, seq := range rec.Applied {
		m, ok := bySeq[seq]
		if !ok {
			return s, fmt.Errorf("the record applied input %d, which is not in the run's history", seq)
		}
		before := inFlight(cur.State)
		next, outcome, why, err := rp.Step(ctx, cur, replay.Message{Subject: m.subject, Header: m.header, Data: m.data, Seq: m.seq, Time: m.time}, "")
		if err != nil {
			return s, fmt.Errorf("step %d: %w", seq, err)
		}
		if outcome != step.Applied {
			return s, fmt.Errorf("step %d (%s): %s (%s), but the record applied it", seq, m.kind, outcome, why)
		}
		cur = next
		deadline := false
		if m.kind == subjects.KindTimer {
			switch id := timerID(m); {
			case id == run.DeadlineTimer:
				s.deadlineFires++
				deadline = true
			case strings.HasPrefix(id, "r"):
				s.retryFires++
			default:
				s.afterFires++
			}
		}
		ended := 0
		for node, attempt := range before.attempts {
			a := attemptOf(cur.State, before.activation, node)
			switch {
			case a != nil && a.Waiting && a.Attempt == attempt:
				s.retried++
				if deadline {
					s.timedOut[attemptKey{runID, before.activation, node, attempt}] = true
					ended++
				}
			case deadline && (a == nil || a.Attempt != attempt):
				s.timedOut[attemptKey{runID, before.activation, node, attempt}] = true
				ended++
			}
		}
		if deadline && ended == 0 {
			s.idleDeadlines++
		}
		if cur.State.Status == run.StatusFailed {
			for node, attempt := range before.attempts {
				if k := (attemptKey{runID, before.activation, node, attempt}); !s.timedOut[k] {
					s.abandoned[k] = true
				}
			}
		}
		s.states++
		if err := cur.State.Stranded(); err != nil {
			s.stranded = append(s.stranded, fmt.Sprintf("after input %d (%s): %v", seq, m.kind, err))
		}
	}
	if cur.Record == nil {
		return s, fmt.Errorf("no input applied")
	}
	if !bytes.Equal(cur.Record.State, rec.State) {
		if at, saved, stepped := replay.Diverge(rec.State, cur.Record.State); at != "" || saved != "" || stepped != "" {
			return s, fmt.Errorf("re-applying the applied inputs does not give the saved state: at %q saved %s, stepped %s", at, saved, stepped)
		}
	}
	return s, nil
}

// flight is the attempts a state has in flight (not waiting for a
// retry), by node, in its work state's activation.
type flight struct {
	activation string
	attempts   map[string]int
}

func inFlight(st *run.State) flight {
	f := flight{attempts: map[string]int{}}
	if st == nil || st.Work == nil {
		return f
	}
	f.activation = st.Work.Activation
	for node, a := range st.Work.Running {
		if !a.Waiting {
			f.attempts[node] = a.Attempt
		}
	}
	return f
}

// attemptOf is the node's attempt in st if st still works on activation.
func attemptOf(st *run.State, activation, node string) *run.Attempt {
	if st == nil || st.Work == nil || st.Work.Activation != activation {
		return nil
	}
	return st.Work.Running[node]
}

// timerID is the id of the timer a fire is for: the body's, else the
// header the scheduler copied (docs/PROTOCOL.md section 6).
func timerID(m input) string {
	var body wire.Timer
	if json.Unmarshal(m.data, &body) == nil && body.Timer != "" {
		return body.Timer
	}
	return m.header.Get(wire.HeaderTimer)
}
