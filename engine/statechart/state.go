package statechart

import (
	"math"
	"slices"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// maxSafe is Number.MAX_SAFE_INTEGER.
const maxSafe = 1<<53 - 1

// State is the control snapshot {active, history, timers, serial, time}.
// Treat it as immutable: results never share slices or maps with their
// inputs, and calls never modify the State they are given.
type State struct {
	// Active lists the active leaf ids in tree order.
	Active []string
	// History maps a history pseudo-state to its remembered states.
	History map[string][]string
	// Timers are pending delayed transitions, by deadline then index.
	Timers []Timer
	// Serial is the last timer token issued.
	Serial int64
	// Time is the snapshot's logical time in milliseconds.
	Time float64
	// Extra holds unknown snapshot members, which the reference keeps.
	Extra map[string]any
}

// Timer is a pending delayed transition: its transition index, absolute
// deadline and token.
type Timer struct {
	Transition int
	At         float64
	Token      int64
	// Extra holds unknown timer members, which the reference keeps.
	Extra map[string]any
}

// ToValue returns the snapshot as the JSON value the reference stores.
func (s State) ToValue() any {
	m := make(map[string]any, 5+len(s.Extra))
	for k, v := range s.Extra {
		m[k] = v
	}
	m["active"] = stringsValue(s.Active)
	h := make(map[string]any, len(s.History))
	for k, v := range s.History {
		h[k] = stringsValue(v)
	}
	m["history"] = h
	timers := make([]any, len(s.Timers))
	for i, t := range s.Timers {
		tm := make(map[string]any, 3+len(t.Extra))
		for k, v := range t.Extra {
			tm[k] = v
		}
		tm["transition"] = float64(t.Transition)
		tm["at"] = t.At
		tm["token"] = float64(t.Token)
		timers[i] = tm
	}
	m["timers"] = timers
	m["serial"] = float64(s.Serial)
	m["time"] = s.Time
	return m
}

func stringsValue(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// work is the mutable control state of one call, in ranks.
type work struct {
	leaves []int
	hist   map[int][]int
	timers []timer
	serial int64
	time   float64
	extra  map[string]any
}

type timer struct {
	tr    int
	at    float64
	token int64
	extra map[string]any
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func invalid(reason string) error { return fault.NoPath(fault.JF2010, reason) }

// legal checks a leaf configuration: declared, distinct atomic or final
// leaves (below root when root >= 0) whose closure has one active root and
// legal compound and parallel children. It returns the leaves as ranks in
// tree order; act holds their closure.
func (c *Chart) legal(ids []string, root int, act []bool, dst []int) ([]int, bool) {
	if len(ids) == 0 {
		return nil, false
	}
	leaves := dst[:0]
	for _, id := range ids {
		r, ok := c.ids[id]
		if !ok || !c.nodes[r].kind.leafKind() || !c.below(r, root) {
			return nil, false
		}
		leaves = append(leaves, r)
	}
	slices.Sort(leaves)
	for i := 1; i < len(leaves); i++ {
		if leaves[i] == leaves[i-1] {
			return nil, false
		}
	}
	c.closure(leaves, act)
	if root < 0 {
		n := 0
		for _, r := range c.roots {
			if act[r] {
				n++
			}
		}
		if n != 1 {
			return nil, false
		}
	}
	lo, hi := 0, len(c.nodes)-1
	if root >= 0 {
		lo, hi = root, c.nodes[root].end
	}
	for id := lo; id <= hi; id++ {
		if !act[id] {
			continue
		}
		n := &c.nodes[id]
		if n.kind != kindCompound && n.kind != kindParallel {
			continue
		}
		count := 0
		for _, ch := range n.ordinary {
			if act[ch] {
				count++
			}
		}
		if (n.kind == kindCompound && count != 1) || (n.kind == kindParallel && count != len(n.ordinary)) {
			return nil, false
		}
	}
	return leaves, true
}

// load validates a snapshot against the chart, as the reference's restore
// does, and returns a normalized working copy. scratch must hold at least
// len(c.nodes) entries; dst, when not nil, is reused for the leaves.
func (c *Chart) load(s State, scratch []bool, dst []int) (work, error) {
	act := scratch[:len(c.nodes)]
	leaves, ok := c.legal(s.Active, -1, act, dst)
	if !ok || s.Serial < 0 || s.Serial > maxSafe || !finite(s.Time) {
		return work{}, invalid("invalid statechart snapshot")
	}
	w := work{leaves: leaves, serial: s.Serial, time: s.Time + 0}
	if len(s.History) > 0 {
		hist, err := c.loadHistory(s.History)
		if err != nil {
			return work{}, err
		}
		w.hist = hist
	}
	if len(s.Timers) > 0 {
		w.timers = make([]timer, len(s.Timers))
		var tokens map[int64]bool
		if len(s.Timers) > 16 {
			tokens = make(map[int64]bool, len(s.Timers))
		}
		seen := make([]bool, len(c.transitions))
		for i, t := range s.Timers {
			if t.Transition < 0 || t.Transition >= len(c.transitions) {
				return work{}, invalid("invalid timer record")
			}
			tr := &c.transitions[t.Transition]
			if tr.trigger != trigAfter || !act[tr.from] || !finite(t.At) ||
				t.Token <= 0 || t.Token > s.Serial {
				return work{}, invalid("invalid timer record")
			}
			if seen[t.Transition] || duplicateToken(w.timers[:i], tokens, t.Token) {
				return work{}, invalid("invalid timer record")
			}
			seen[t.Transition] = true
			w.timers[i] = timer{tr: t.Transition, at: t.At + 0, token: t.Token, extra: cloneMap(t.Extra)}
		}
		sortTimers(w.timers)
	}
	w.extra = cloneMap(s.Extra)
	return w, nil
}

func (c *Chart) loadHistory(h map[string][]string) (map[int][]int, error) {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	value.SortKeys(keys)
	out := make(map[int][]int, len(h))
	scratch := make([]bool, len(c.nodes))
	for _, id := range keys {
		list, err := c.historyEntry(id, h[id], scratch)
		if err != nil {
			return nil, err
		}
		out[c.ids[id]] = list
	}
	return out, nil
}

// historyEntry validates one remembered configuration and returns it as
// ranks in tree order.
func (c *Chart) historyEntry(id string, remembered []string, scratch []bool) ([]int, error) {
	h, ok := c.ids[id]
	if !ok || c.nodes[h].kind != kindHistory || len(remembered) == 0 || !distinct(remembered) {
		return nil, invalid("invalid history record")
	}
	parent := c.nodes[h].parent
	if c.nodes[h].deep {
		list, ok := c.legal(remembered, parent, scratch, nil)
		if !ok {
			return nil, invalid("illegal deep history configuration")
		}
		return list, nil
	}
	p := &c.nodes[parent]
	want := 1
	if p.kind == kindParallel {
		want = len(p.ordinary)
	}
	list := make([]int, 0, len(remembered))
	for _, x := range remembered {
		r, ok := c.ids[x]
		if !ok || c.nodes[r].parent != parent || c.nodes[r].kind == kindHistory {
			return nil, invalid("illegal shallow history configuration")
		}
		list = append(list, r)
	}
	if len(list) != want {
		return nil, invalid("illegal shallow history configuration")
	}
	slices.Sort(list)
	return list, nil
}

func distinct(ids []string) bool {
	if len(ids) > 16 {
		seen := make(map[string]bool, len(ids))
		for _, id := range ids {
			if seen[id] {
				return false
			}
			seen[id] = true
		}
		return true
	}
	for i := range ids {
		for j := i + 1; j < len(ids); j++ {
			if ids[i] == ids[j] {
				return false
			}
		}
	}
	return true
}

func duplicateToken(prev []timer, tokens map[int64]bool, token int64) bool {
	if tokens != nil {
		dup := tokens[token]
		tokens[token] = true
		return dup
	}
	for _, t := range prev {
		if t.token == token {
			return true
		}
	}
	return false
}

func sortTimers(ts []timer) {
	slices.SortStableFunc(ts, func(a, b timer) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return a.tr - b.tr
	})
}

func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return value.Clone(m).(map[string]any)
}

// state converts a working copy back into an independent snapshot.
func (c *Chart) state(w *work) State {
	s := State{Serial: w.serial, Time: w.time, Extra: w.extra}
	s.Active = make([]string, len(w.leaves))
	for i, r := range w.leaves {
		s.Active[i] = c.nodes[r].id
	}
	if len(w.hist) > 0 {
		s.History = make(map[string][]string, len(w.hist))
		for h, list := range w.hist {
			ids := make([]string, len(list))
			for i, r := range list {
				ids[i] = c.nodes[r].id
			}
			s.History[c.nodes[h].id] = ids
		}
	}
	if len(w.timers) > 0 {
		s.Timers = make([]Timer, len(w.timers))
		for i, t := range w.timers {
			s.Timers[i] = Timer{Transition: t.tr, At: t.at, Token: t.token, Extra: t.extra}
		}
	}
	return s
}
