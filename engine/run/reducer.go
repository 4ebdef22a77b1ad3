package run

import (
	"strconv"
	"strings"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/statechart"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/engine/workflow"
)

// reducer applies one message to a private copy of a state, mirroring
// the reference's run loop step for step: every place the reference
// persists a snapshot bumps the generation here too.
type reducer struct {
	wf   *workflow.Workflow
	st   *State
	prev *State // the state before the message, nil for a start
	msg  Message
	opts Options
	now  float64
	// effects collected in order; ids are assigned in finish.
	effects []Effect
	// serial is the control's timer serial before the message: timers with
	// a larger token are new and must be armed.
	serial int64
	status Status
	// budget is what every query of this message may spend, together.
	budget query.Budget
	// redriven is, during a redrive, the base and kept values of the
	// activation it invokes again, taken by the first Work it builds.
	redriven *redriven
}

func newReducer(wf *workflow.Workflow, prev *State, msg Message, opts Options) *reducer {
	st := prev.copy()
	st.Seq++
	st.Ignored = nil
	now := msg.Time
	if msg.NoTime {
		now = prev.Control.Time
	}
	return &reducer{
		wf: wf, st: st, prev: prev, msg: msg, opts: opts, now: now,
		serial: prev.Control.Serial, status: prev.Status, budget: query.Budget{Steps: opts.Steps, Bytes: opts.Bytes},
	}
}

// copy returns a state whose maps may be written without touching s. The
// JSON values inside are shared: the reducer never modifies a value.
func (s *State) copy() *State {
	c := *s
	c.Context.Results = copyMap(s.Context.Results)
	c.Context.Visits = copyMap(s.Context.Visits)
	if s.Pending != nil {
		p := *s.Pending
		p.Values = copyMap(p.Values)
		c.Pending = &p
	}
	if s.Work != nil {
		w := *s.Work
		w.Values = copyMap(w.Values)
		w.Running = make(map[string]*Attempt, len(s.Work.Running))
		for k, v := range s.Work.Running {
			a := *v
			w.Running[k] = &a
		}
		if s.Work.Retries != nil {
			w.Retries = make(map[string]string, len(s.Work.Retries))
			for k, v := range s.Work.Retries {
				w.Retries[k] = v
			}
		}
		c.Work = &w
	}
	c.Buffered = append([]Event(nil), s.Buffered...)
	c.Held = append([]Held(nil), s.Held...)
	return &c
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// persist mirrors one of the reference's snapshot writes.
func (r *reducer) persist() { r.st.Generation++ }

func (r *reducer) contextValue() map[string]any { return r.st.Context.value() }

// startOpts, stepOpts and clockOpts are the options of a statechart
// call; each charges the message's budget.
func (r *reducer) startOpts(now float64, ctx any) statechart.StartOptions {
	return statechart.StartOptions{Now: now, Context: ctx, Budget: &r.budget}
}

func (r *reducer) stepOpts(ctx, payload any) statechart.StepOptions {
	return statechart.StepOptions{Context: ctx, Payload: payload, Budget: &r.budget}
}

// clockOpts moves the chart's clock to now.
func (r *reducer) clockOpts() statechart.StepOptions {
	now := r.now
	return statechart.StepOptions{Now: &now, Context: r.contextValue(), Budget: &r.budget}
}

// admit counts a visit to each entered state, failing with JF2015 when a
// state would exceed its limit.
func (r *reducer) admit(entered []string) error {
	for _, id := range entered {
		visits := 1.0
		if v, ok := r.st.Context.Visits[id].(float64); ok {
			visits = v + 1
		}
		spec := r.wf.Spec(id)
		if spec != nil && spec.Limit > 0 && visits > float64(spec.Limit) {
			return fault.New(fault.JF2015, "state '"+id+"' exceeded its visit limit", r.wf.Lowered.Sources[id])
		}
		r.st.Context.Visits[id] = visits
	}
	return nil
}

// apply commits a statechart result as the reference's apply does.
func (r *reducer) apply(res statechart.Result, mutate func()) error {
	if len(res.Errors) > 0 {
		e := res.Errors[0]
		return &fault.Error{Code: fault.JF2016, Reason: e.Message, Path: e.DocPath, HasPath: true}
	}
	saved := r.st.copy()
	if mutate != nil {
		mutate()
	}
	r.st.Control = res.State
	if res.Final {
		r.st.Status = StatusDone
	} else {
		r.st.Status = StatusRunning
	}
	if err := r.admit(res.Entered); err != nil {
		*r.st = *saved // the reference's failed write leaves the snapshot as it was
		return err
	}
	r.persist()
	return nil
}

func (r *reducer) active() string { return r.st.Control.Active[0] }

// fail ends the run with err. The snapshot stays the last one the
// reference would have written.
func (r *reducer) fail(err error) {
	f := &Failure{Code: string(fault.CodeOf(err)), Message: err.Error()}
	if f.Code == "" {
		f.Code = string(fault.JF2016)
	}
	if p, ok := fault.PathOf(err); ok {
		f.Path = p
	} else {
		f.Unlocated = true
	}
	r.st.Status = StatusFailed
	r.st.Error = f
	if r.st.Work != nil {
		r.st.Kept = r.keep()
	}
	r.st.Work = nil
}

func (r *reducer) cancel() {
	r.st.Status = StatusCancelled
	r.st.Work = nil
	r.st.Buffered = nil
	r.st.Paused, r.st.Held = nil, nil
}

// finish arms new timers, announces a status change and numbers effects.
func (r *reducer) finish() (*State, []Effect, error) {
	st := r.st
	if st.Status == StatusWaiting {
		for _, t := range st.Control.Timers {
			if t.Token > r.serial {
				r.effects = append(r.effects, Effect{Arm: &ArmTimer{ID: "t" + strconv.FormatInt(t.Token, 10), Deadline: t.At}})
			}
		}
	}
	if r.prev == nil || st.Status != r.status || st.Status.Terminal() {
		r.effects = append(r.effects, Effect{Settled: st.Announcement()})
	}
	// Last, so that the ids of the other effects are those of builds
	// that had no deadlines.
	r.syncDeadline()
	prefix := st.RunID + "/" + strconv.FormatInt(st.Seq, 10) + "/"
	for i := range r.effects {
		r.effects[i].ID = prefix + strconv.Itoa(i)
	}
	return st, r.effects, nil
}

// scopeForSaved is the reference's scope for a work input query.
func (r *reducer) workScope() map[string]any {
	id := r.active()
	visit, _ := r.st.Context.Visits[id].(float64)
	ctx := r.contextValue()
	ctx["activation"] = map[string]any{
		"runId": r.st.RunID, "state": id, "visit": visit,
		"key": activationKey(r.st.RunID, id, visit),
	}
	return map[string]any{"state": value.Clone(stringsValue(r.st.Control.Active)), "event": nil, "payload": nil, "context": ctx}
}

// activationKey is the reference's canonicalizeJson([runId, state, visit]).
func activationKey(runID, state string, visit float64) string {
	var b strings.Builder
	b.WriteByte('[')
	value.WriteString(&b, runID)
	b.WriteByte(',')
	value.WriteString(&b, state)
	b.WriteByte(',')
	b.WriteString(value.NumberString(visit))
	b.WriteByte(']')
	return b.String()
}

func stringsValue(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}
