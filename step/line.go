package step

import (
	"fmt"
	"slices"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/subjects"
)

// Line is a run's line of inputs as a walk of its history (a replay, or
// a dispatcher rebuilding a run for a reset) took them: the inputs the
// run applied or refused, in the order it took them, each with the
// state after it, less those a reset superseded. A reset goes back to a
// point on it; everything after that point leaves the line, superseded.
// A walk keeps it on the run it carries from step to step (Run.Line);
// the states share their values, so it costs little more than the maps
// each step copies.
type Line struct {
	seqs   []uint64
	states map[uint64]*run.State
	// superseded maps an input a reset took off the line to that reset.
	superseded map[uint64]uint64
	// points maps a reset the line applied to the input it went back to.
	points map[uint64]uint64
}

// Took notes what the step of in (at seq) did, with res its result: a
// start begins the line, an input applied or refused joins it, and an
// applied reset first takes everything after its point off it. It
// returns the line, which is l or a new one for a start.
func (l *Line) Took(in *Input, seq uint64, res Result) *Line {
	if res.Outcome != Applied && res.Outcome != Rejected {
		return l
	}
	if in.Kind == subjects.KindStart && res.Outcome == Applied {
		l = &Line{states: map[uint64]*run.State{}, superseded: map[uint64]uint64{}, points: map[uint64]uint64{}}
	}
	if l == nil || l.states[seq] != nil {
		return l
	}
	if i := slices.Index(l.seqs, in.resetTo); in.Kind == subjects.KindReset && res.Outcome == Applied && i >= 0 {
		for _, s := range l.seqs[i+1:] {
			l.superseded[s] = seq
			delete(l.states, s)
		}
		l.seqs = l.seqs[:i+1]
		l.points[seq] = in.resetTo
	}
	l.seqs = append(l.seqs, seq)
	l.states[seq] = res.Run.State
	return l
}

// Point is the state after input to, for a reset at seq reset; or why
// the run cannot go back there: it is not an input the run took before
// the reset, a reset superseded it, or it is the latest input already.
func (l *Line) Point(runID string, to, reset uint64) (*run.State, error) {
	if l == nil || len(l.seqs) == 0 {
		return nil, fmt.Errorf("run %q has no history to go back in", runID)
	}
	if by, ok := l.superseded[to]; ok {
		return nil, fmt.Errorf("input seq %d of run %q was superseded by the reset at seq %d: it is no longer on the run's line (pick an input that `jetflow history %s` does not mark superseded)", to, runID, by, runID)
	}
	st := l.states[to]
	switch {
	case st == nil:
		return nil, fmt.Errorf("seq %d is not an input run %q took before the reset at seq %d (pick one that `jetflow history %s` marks applied or rejected)", to, runID, reset, runID)
	case to == l.seqs[len(l.seqs)-1]:
		return nil, fmt.Errorf("input seq %d is the latest input run %q took: the run is as it was after it already", to, runID)
	}
	return st, nil
}

// Superseded reports whether a reset took the input at seq off the line:
// the reset's sequence and the input it went back to.
func (l *Line) Superseded(seq uint64) (reset, to uint64, ok bool) {
	if l == nil {
		return 0, 0, false
	}
	reset, ok = l.superseded[seq]
	return reset, l.points[reset], ok
}

// WentBack reports whether the input at seq is a reset the line applied,
// and the input it went back to.
func (l *Line) WentBack(seq uint64) (to uint64, ok bool) {
	if l == nil {
		return 0, false
	}
	to, ok = l.points[seq]
	return to, ok
}

// Seqs are the inputs on the line, in the order the run took them.
func (l *Line) Seqs() []uint64 {
	if l == nil {
		return nil
	}
	return slices.Clone(l.seqs)
}

// State is the run's state after the input at seq on the line, nil when
// seq is not on it.
func (l *Line) State(seq uint64) *run.State {
	if l == nil {
		return nil
	}
	return l.states[seq]
}
