// Package statechart compiles and runs jaren-fsm 0.2 statecharts
// (STATECHART-FORMAT.md of @jarenjs/flow 0.91.4): compound and parallel
// states, shallow and deep history, completion and eventless transitions,
// and delayed transitions with absolute deadlines. It is pure: time,
// context and payload are arguments, effects are returned as data, and
// every call returns a new control snapshot. Workflows lower to these
// charts; results, snapshots and errors match the reference's.
package statechart

import (
	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
)

// kind is a state's type after inference.
type kind uint8

const (
	kindUnset kind = iota
	kindAtomic
	kindCompound
	kindParallel
	kindFinal
	kindHistory
)

var kindNames = [...]string{"", "atomic", "compound", "parallel", "final", "history"}

func (k kind) String() string { return kindNames[k] }

func kindOf(name string) kind {
	for k, n := range kindNames {
		if n != "" && n == name {
			return kind(k)
		}
	}
	return kindUnset
}

// leafKind reports whether a state of this kind can be an active leaf.
func (k kind) leafKind() bool { return k == kindAtomic || k == kindFinal }

// trigger is what a transition waits for.
type trigger uint8

const (
	trigWildcard trigger = iota // no trigger, or event: null
	trigEvent
	trigAfter
	trigDone
	trigAlways
)

// node is a compiled state. Nodes are stored in tree order (parents before
// children, siblings in declaration order), so a subtree is the contiguous
// rank range [rank, end].
type node struct {
	id       string
	kind     kind
	deep     bool // a deep history pseudo-state
	parent   int  // rank, or -1 for a root
	end      int  // last rank of the subtree
	children []int
	ordinary []int // children that are not history pseudo-states
	initial  int   // rank of the initial child of a compound state
	entry    []effect
	exit     []effect
	out      []int // indices of transitions leaving this state, document order
}

// transition is a compiled transition.
type transition struct {
	index     int
	from, to  int
	trigger   trigger
	event     string
	after     float64
	domain    int // rank of the transition domain, or -1 for the virtual root
	guard     *query.Query
	guardPath string
	effects   []effect
}

// Chart is a compiled statechart, safe for concurrent use.
type Chart struct {
	nodes         []node
	ids           map[string]int
	roots         []int
	initial       int
	transitions   []transition
	hasHistory    bool
	maxMicrosteps int
	states        []string
}

// Options tune compilation. The zero value is the reference's default.
type Options struct {
	// MaxMicrosteps bounds the automatic transitions and timer firings of
	// one call: at most 2^53-1, as the reference's positive safe integer;
	// CompileWith refuses a negative one. Default 1000.
	MaxMicrosteps int
	// Written is the member order of the document's objects as written
	// (value.DecodeWritten), for a document the reference reads as written
	// rather than canonicalized: the first unknown member of an object is
	// the first in that order, and guards and effect withs compile as
	// written. Nil: Keys order, the order of a canonicalized document.
	Written value.Written
}

// States returns the state ids in tree order.
func (c *Chart) States() []string { return append([]string(nil), c.states...) }

// below reports whether id is a proper descendant of p; every state is
// below the virtual root (-1).
func (c *Chart) below(id, p int) bool {
	return p < 0 || (id > p && id <= c.nodes[p].end)
}

// within reports whether id is p or one of its descendants.
func (c *Chart) within(id, p int) bool { return id == p || c.below(id, p) }

// closure marks every active leaf and its ancestors in act.
func (c *Chart) closure(leaves []int, act []bool) {
	clear(act)
	for _, id := range leaves {
		for p := id; p >= 0 && !act[p]; p = c.nodes[p].parent {
			act[p] = true
		}
	}
}

// complete reports whether an active state has completed: a final state, a
// compound state with an active final child, or a parallel state whose
// regions have all completed.
func (c *Chart) complete(id int, act []bool) bool {
	if !act[id] {
		return false
	}
	n := &c.nodes[id]
	switch n.kind {
	case kindFinal:
		return true
	case kindCompound:
		for _, ch := range n.ordinary {
			if act[ch] && c.nodes[ch].kind == kindFinal {
				return true
			}
		}
	case kindParallel:
		for _, ch := range n.ordinary {
			if !c.complete(ch, act) {
				return false
			}
		}
		return true
	}
	return false
}

func (c *Chart) finalOf(act []bool) bool {
	for _, r := range c.roots {
		if c.complete(r, act) {
			return true
		}
	}
	return false
}

// Final reports whether a root of the state's configuration has completed.
// Ids the chart does not declare are ignored; restore a snapshot first to
// have it validated.
func (c *Chart) Final(s State) bool {
	act := make([]bool, len(c.nodes))
	for _, id := range s.Active {
		if r, ok := c.ids[id]; ok {
			for p := r; p >= 0 && !act[p]; p = c.nodes[p].parent {
				act[p] = true
			}
		}
	}
	return c.finalOf(act)
}

// Events returns the distinct named events of the transitions leaving the
// active configuration, in transition document order. The snapshot is
// validated first, as the reference does.
func (c *Chart) Events(s State) ([]string, error) {
	act := make([]bool, len(c.nodes))
	w, err := c.load(s, act, nil)
	if err != nil {
		return nil, err
	}
	c.closure(w.leaves, act)
	var out []string
	seen := map[string]bool{}
	for i := range c.transitions {
		t := &c.transitions[i]
		if t.trigger == trigEvent && act[t.from] && !seen[t.event] {
			seen[t.event] = true
			out = append(out, t.event)
		}
	}
	return out, nil
}
