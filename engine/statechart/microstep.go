package statechart

import (
	"sync"

	"github.com/jetflow/jetflow/engine/fault"
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
	ok, err := t.guard.EBV(sc.value(), nil)
	if err != nil {
		r.out.Errors = append(r.out.Errors, Record{Code: fault.JF2003, DocPath: t.guardPath, Message: err.Error()})
		return 2
	}
	if ok {
		return 1
	}
	return 2
}

func (t *transition) matches(m mode, timerTr int, event string, c *Chart, act []bool) bool {
	switch m {
	case modeTimer:
		return t.index == timerTr
	case modeAuto:
		return t.trigger == trigAlways || (t.trigger == trigDone && c.complete(t.from, act))
	}
	return t.trigger == trigWildcard || (t.trigger == trigEvent && t.event == event)
}

// choose selects the enabled transitions: for each active leaf, its own
// transitions and then its ancestors', nearest first, the first match
// whose guard passes. Conflicting selections keep the descendant source.
func (r *runner) choose(m mode, timerTr int, event string, sc *scope) []sel {
	c := r.c
	c.closure(r.w.leaves, r.act)
	clear(r.eval)
	r.enabled = r.enabled[:0]
	for _, leaf := range r.w.leaves {
	search:
		for id := leaf; id >= 0; id = c.nodes[id].parent {
			for _, ti := range c.nodes[id].out {
				t := &c.transitions[ti]
				if !t.matches(m, timerTr, event, c, r.act) {
					continue
				}
				if r.eval[ti] == 0 {
					r.eval[ti] = r.guard(t, sc)
				}
				if r.eval[ti] == 1 {
					if !containsInt(r.enabled, ti) {
						r.enabled = append(r.enabled, ti)
					}
					break search
				}
			}
		}
	}
	r.sel = r.sel[:0]
	for _, ti := range r.enabled {
		t := &c.transitions[ti]
		lo, hi := 0, len(c.nodes)-1
		if t.domain >= 0 {
			lo, hi = t.domain+1, c.nodes[t.domain].end
		}
		blocked, conflicts := false, 0
		for _, o := range r.sel {
			of := c.transitions[o.t].from
			if r.overlap(lo, hi, o.lo, o.hi) || c.within(t.from, of) || c.within(of, t.from) {
				if !c.below(t.from, of) {
					blocked = true
					break
				}
				conflicts++
			}
		}
		if blocked {
			continue
		}
		if conflicts > 0 {
			kept := r.sel[:0]
			for _, o := range r.sel {
				of := c.transitions[o.t].from
				if !(r.overlap(lo, hi, o.lo, o.hi) || c.within(t.from, of) || c.within(of, t.from)) {
					kept = append(kept, o)
				}
			}
			r.sel = kept
		}
		r.sel = append(r.sel, sel{t: ti, lo: lo, hi: hi})
	}
	// Few selections: insertion sort by transition index.
	for i := 1; i < len(r.sel); i++ {
		for j := i; j > 0 && r.sel[j-1].t > r.sel[j].t; j-- {
			r.sel[j-1], r.sel[j] = r.sel[j], r.sel[j-1]
		}
	}
	return r.sel
}

// overlap reports whether two exit sets share an active state.
func (r *runner) overlap(lo1, hi1, lo2, hi2 int) bool {
	for id := max(lo1, lo2); id <= min(hi1, hi2); id++ {
		if r.act[id] {
			return true
		}
	}
	return false
}

func containsInt(list []int, x int) bool {
	for _, v := range list {
		if v == x {
			return true
		}
	}
	return false
}

// microstep fires the selected transitions together: record history,
// exit (reverse tree order), cancel the exited sources' timers, run
// transition effects, enter the targets and their defaults (tree order)
// and schedule the entered states' delays.
func (r *runner) microstep(selected []sel, sc *scope) error {
	if len(selected) == 0 {
		return nil
	}
	c := r.c
	act, exiting := r.act, r.exiting
	c.closure(r.w.leaves, act)
	clear(exiting)
	for _, s := range selected {
		for id := s.lo; id <= s.hi; id++ {
			if act[id] {
				exiting[id] = true
			}
		}
	}
	if c.hasHistory {
		r.remember()
	}
	for id := len(c.nodes) - 1; id >= 0; id-- {
		if exiting[id] {
			r.effects(c.nodes[id].exit, sc)
			act[id] = false
			r.out.Exited = append(r.out.Exited, c.nodes[id].id)
		}
	}
	timers := r.w.timers[:0]
	for _, t := range r.w.timers {
		if !exiting[c.transitions[t.tr].from] {
			timers = append(timers, t)
		}
	}
	r.w.timers = timers
	for _, s := range selected {
		r.effects(c.transitions[s.t].effects, sc)
	}
	copy(r.kept, act)
	for _, s := range selected {
		r.target(c.transitions[s.t].to)
	}
	r.w.leaves = r.fill()
	r.entered = r.entered[:0]
	for id, on := range act {
		if on && !r.kept[id] {
			r.entered = append(r.entered, id)
			r.out.Entered = append(r.out.Entered, c.nodes[id].id)
		}
	}
	for _, id := range r.entered {
		r.effects(c.nodes[id].entry, sc)
	}
	if err := r.schedule(r.entered); err != nil {
		return err
	}
	r.out.Changed = true
	for _, s := range selected {
		r.out.Transitions = append(r.out.Transitions, s.t)
	}
	return nil
}

// remember records, for each history child of an exiting state, the
// configuration it will restore: the active leaves below it (deep) or its
// active ordinary children (shallow).
func (r *runner) remember() {
	c := r.c
	for id, on := range r.exiting {
		if !on {
			continue
		}
		for _, h := range c.nodes[id].children {
			hn := &c.nodes[h]
			if hn.kind != kindHistory {
				continue
			}
			var list []int
			if hn.deep {
				for _, leaf := range r.w.leaves {
					if c.below(leaf, id) {
						list = append(list, leaf)
					}
				}
			} else {
				for _, ch := range c.nodes[id].ordinary {
					if r.act[ch] {
						list = append(list, ch)
					}
				}
			}
			if r.w.hist == nil {
				r.w.hist = map[int][]int{}
			}
			r.w.hist[h] = list
		}
	}
}

// target marks a target and its ancestors active; a history target
// expands to its remembered states, or to its parent's default.
func (r *runner) target(id int) {
	c := r.c
	if n := &c.nodes[id]; n.kind == kindHistory {
		if list, ok := r.w.hist[id]; ok {
			for _, x := range list {
				r.target(x)
			}
		} else {
			r.target(n.parent)
		}
		return
	}
	for p := id; p >= 0 && !r.act[p]; p = c.nodes[p].parent {
		r.act[p] = true
	}
}

// fill completes the marked configuration with initial children and
// parallel regions and returns the new leaves in tree order.
func (r *runner) fill() []int {
	c, act := r.c, r.act
	r.flip = 1 - r.flip
	leaves := r.leafBuf[r.flip][:0]
	for id := range c.nodes {
		if !act[id] {
			continue
		}
		n := &c.nodes[id]
		switch n.kind {
		case kindParallel:
			for _, ch := range n.ordinary {
				act[ch] = true
			}
		case kindCompound:
			found := false
			for _, ch := range n.ordinary {
				if act[ch] {
					found = true
					break
				}
			}
			if !found {
				act[n.initial] = true
			}
		case kindAtomic, kindFinal:
			leaves = append(leaves, id)
		}
	}
	r.leafBuf[r.flip] = leaves
	return leaves
}

// schedule creates one timer per delayed transition of each entered
// state, at the snapshot's logical time plus the delay.
func (r *runner) schedule(entered []int) error {
	c := r.c
	added := false
	for _, id := range entered {
		for _, ti := range c.nodes[id].out {
			t := &c.transitions[ti]
			if t.trigger != trigAfter {
				continue
			}
			at := r.w.time + t.after
			if !finite(at) || r.w.serial+1 > maxSafe {
				return errRange
			}
			r.w.serial++
			r.w.timers = append(r.w.timers, timer{tr: ti, at: at, token: r.w.serial})
			added = true
		}
	}
	if added {
		sortTimers(r.w.timers)
	}
	return nil
}
