package statechart

// matches reports whether a transition answers a selection: the timer's own
// transition; always and completed done transitions; or, for an external
// event, named and wildcard transitions (never timers or completion).
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
				return errRange()
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
