package statechart

import (
	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/query"
)

// StartOptions are the inputs of a fresh start. Now defaults to zero.
type StartOptions struct {
	Now     float64
	Context any
	Payload any
	// Budget, when set, is charged every guard and effect evaluation of
	// the call instead of each query's own step and byte limits.
	Budget *query.Budget
}

// StepOptions are the inputs of an external event. A nil Now keeps the
// snapshot's time.
type StepOptions struct {
	Now     *float64
	Context any
	Payload any
	Budget  *query.Budget // as in StartOptions
}

// AdvanceOptions are the inputs of a time advance. One consumes at most
// one due timer (plus its stabilization) and leaves time at its deadline.
type AdvanceOptions struct {
	Context any
	Payload any
	One     bool
	Budget  *query.Budget // as in StartOptions
}

// Result is the outcome of Start, Step or Advance.
type Result struct {
	State State
	// Changed reports that a transition fired.
	Changed bool
	// Final reports that a root of the resulting configuration completed.
	Final bool
	// Effects are resolved descriptors: exit, transition, entry, per microstep.
	Effects []Effect
	// Errors are fail-closed guard (JF2003) and effect (JF2004) failures.
	Errors []Record
	// Entered and Exited list states in the order the reference reports
	// them: entry in tree order, exit in reverse tree order, per microstep.
	Entered []string
	Exited  []string
	// Transitions are the fired transition indices, per microstep in
	// document order.
	Transitions []int
}

// ToValue returns the result as the reference reports it.
func (r Result) ToValue() any {
	effects := make([]any, len(r.Effects))
	for i, e := range r.Effects {
		effects[i] = e.ToValue()
	}
	errs := make([]any, len(r.Errors))
	for i, e := range r.Errors {
		errs[i] = e.ToValue()
	}
	trs := make([]any, len(r.Transitions))
	for i, t := range r.Transitions {
		trs[i] = float64(t)
	}
	return map[string]any{
		"changed": r.Changed, "state": r.State.ToValue(), "final": r.Final,
		"effects": effects, "errors": errs, "entered": stringsValue(r.Entered),
		"exited": stringsValue(r.Exited), "transitions": trs,
	}
}

// The runtime failures the reference throws; each call gets its own value.
func errTime() error {
	return fault.NoPath(fault.JF2011, "time must be finite and cannot move backwards")
}

func errRange() error {
	return fault.NoPath(fault.JF2011, "timer deadline or token exceeds its numeric range")
}

func errMicrostep() error { return fault.NoPath(fault.JF2012, "statechart microstep limit exceeded") }

// Start enters the initial configuration, schedules its delays and
// stabilizes through done and always transitions.
func (c *Chart) Start(opts StartOptions) (Result, error) {
	if !finite(opts.Now) {
		return Result{}, errTime()
	}
	r := c.runner(opts.Context, opts.Payload)
	defer r.release()
	r.budget = opts.Budget
	r.w.time = opts.Now + 0
	r.target(c.initial)
	r.w.leaves = r.fill()
	for id, on := range r.act {
		if on {
			r.entered = append(r.entered, id)
			r.out.Entered = append(r.out.Entered, c.nodes[id].id)
		}
	}
	sc := r.scope("", false)
	for _, id := range r.entered {
		r.effects(c.nodes[id].entry, sc)
	}
	if err := r.schedule(r.entered); err != nil {
		return Result{}, err
	}
	budget := 0
	if err := r.settle("", false, &budget); err != nil {
		return Result{}, err
	}
	return r.finish(), nil
}

// Step delivers an external event. It never fires overdue timers.
func (c *Chart) Step(s State, event string, opts StepOptions) (Result, error) {
	r := c.runner(opts.Context, opts.Payload)
	defer r.release()
	r.budget = opts.Budget
	w, err := c.load(s, r.act, r.leafBuf[0])
	if err != nil {
		return Result{}, err
	}
	r.w = w
	at := s.Time
	if opts.Now != nil {
		at = *opts.Now
	}
	if !finite(at) || at < s.Time {
		return Result{}, errTime()
	}
	r.w.time = at + 0
	sc := r.scope(event, true)
	if err := r.microstep(r.choose(modeEvent, -1, event, sc), sc); err != nil {
		return Result{}, err
	}
	budget := 1
	if err := r.settle(event, true, &budget); err != nil {
		return Result{}, err
	}
	return r.finish(), nil
}

// Advance consumes the timers due by now, each followed by stabilization,
// and moves the snapshot's time to now (or, with One, to the deadline of
// the one timer it consumed).
func (c *Chart) Advance(s State, now float64, opts AdvanceOptions) (Result, error) {
	if !finite(now) || now < s.Time {
		return Result{}, errTime()
	}
	r := c.runner(opts.Context, opts.Payload)
	defer r.release()
	r.budget = opts.Budget
	w, err := c.load(s, r.act, r.leafBuf[0])
	if err != nil {
		return Result{}, err
	}
	r.w = w
	budget := 0
	for len(r.w.timers) > 0 && r.w.timers[0].at <= now {
		if budget++; budget > c.maxMicrosteps {
			return Result{}, errMicrostep()
		}
		t := r.w.timers[0]
		r.w.timers = r.w.timers[1:]
		r.w.time = max(r.w.time, t.at)
		sc := r.scope("", false)
		if err := r.microstep(r.choose(modeTimer, t.tr, "", sc), sc); err != nil {
			return Result{}, err
		}
		if err := r.settle("", false, &budget); err != nil {
			return Result{}, err
		}
		if opts.One {
			break
		}
	}
	if !opts.One || budget == 0 {
		r.w.time = now + 0
	}
	return r.finish(), nil
}

// settle runs automatic microsteps until none is enabled.
func (r *runner) settle(event string, hasEvent bool, budget *int) error {
	for {
		sc := r.scope(event, hasEvent)
		sel := r.choose(modeAuto, -1, "", sc)
		if len(sel) == 0 {
			return nil
		}
		if *budget++; *budget > r.c.maxMicrosteps {
			return errMicrostep()
		}
		if err := r.microstep(sel, sc); err != nil {
			return err
		}
	}
}

func (r *runner) finish() Result {
	r.c.closure(r.w.leaves, r.act)
	r.out.Final = r.c.finalOf(r.act)
	r.out.State = r.c.state(&r.w)
	return r.out
}
