package statechart

import (
	"sync"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/query"
)

// mode is what a selection looks for.
type mode uint8

const (
	modeEvent mode = iota // an external event: named and wildcard transitions
	modeTimer             // one delayed transition
	modeAuto              // always transitions and completed done sources
)

// runner holds one call's working state and scratch space. Small charts
// use the inline arrays, so a call allocates little beyond its result.
type runner struct {
	c                  *Chart
	w                  work
	out                Result
	act, kept, exiting []bool
	eval               []int8 // per transition: 0 unknown, 1 pass, 2 fail
	enabled            []int
	sel                []sel
	entered            []int
	leafBuf            [2][]int // fill alternates, so a scope keeps its leaves
	flip               int
	sc                 scope
	context, payload   any
	budget             *query.Budget // charged every query; nil: their own limits

	flagsArr   [3 * smallChart]bool
	evalArr    [2 * smallChart]int8
	enabledArr [4]int
	selArr     [4]sel
	enteredArr [8]int
	leavesArr  [2][8]int
}

const smallChart = 32

// sel is a selected transition and the rank range of its exit set (the
// active states in [lo, hi]).
type sel struct{ t, lo, hi int }

// runners recycles the scratch space; a runner never outlives its call
// and nothing it returns points into it.
var runners = sync.Pool{New: func() any { return new(runner) }}

func (c *Chart) runner(context, payload any) *runner {
	r := runners.Get().(*runner)
	r.init(c, context, payload)
	return r
}

// release drops every reference the runner holds and recycles it.
func (r *runner) release() {
	*r = runner{}
	runners.Put(r)
}

func (r *runner) init(c *Chart, context, payload any) {
	n := len(c.nodes)
	r.c, r.context, r.payload = c, context, payload
	flags := r.flagsArr[:]
	if 3*n > len(flags) {
		flags = make([]bool, 3*n)
	}
	r.act, r.kept, r.exiting = flags[:n:n], flags[n:2*n:2*n], flags[2*n:3*n]
	r.eval = r.evalArr[:]
	if len(c.transitions) > len(r.eval) {
		r.eval = make([]int8, len(c.transitions))
	}
	r.eval = r.eval[:len(c.transitions)]
	r.enabled, r.sel, r.entered = r.enabledArr[:0], r.selArr[:0], r.enteredArr[:0]
	r.leafBuf[0], r.leafBuf[1] = r.leavesArr[0][:0], r.leavesArr[1][:0]
}

// scope is the evaluation scope of guards and effects: {state, event,
// payload, context}, where state is the active leaf ids before the
// microstep. The JSON value is built only when a query needs it.
type scope struct {
	r        *runner
	leaves   []int
	event    string
	hasEvent bool // false: the event is null (start and timers)
	m        map[string]any
}

// scope starts the scope of the next selection; only one is live at a time.
func (r *runner) scope(event string, hasEvent bool) *scope {
	r.sc = scope{r: r, leaves: r.w.leaves, event: event, hasEvent: hasEvent}
	return &r.sc
}

func (s *scope) value() any {
	if s.m == nil {
		ids := make([]any, len(s.leaves))
		for i, id := range s.leaves {
			ids[i] = s.r.c.nodes[id].id
		}
		var event any
		if s.hasEvent {
			event = s.event
		}
		s.m = map[string]any{"state": ids, "event": event, "payload": s.r.payload, "context": s.r.context}
	}
	return s.m
}

func (r *runner) effects(list []effect, sc *scope) {
	for i := range list {
		list[i].resolve(sc, &r.out)
	}
}

// guard evaluates a transition's guard; a failing guard reads false and
// is recorded as JF2003.
func (r *runner) guard(t *transition, sc *scope) int8 {
	if t.guard == nil {
		return 1
	}
	ok, err := t.guard.Within(r.budget).EBV(sc.value(), nil)
	if err != nil {
		r.out.Errors = append(r.out.Errors, Record{Code: fault.JF2003, DocPath: t.guardPath, Message: err.Error()})
		return 2
	}
	if ok {
		return 1
	}
	return 2
}
