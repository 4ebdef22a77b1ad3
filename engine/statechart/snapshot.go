package statechart

import (
	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// The reference's step and advance take the snapshot as JSON and check
// their other arguments at their own places among its checks; these entry
// points do the same for a caller holding a snapshot as JSON (a stored
// record, a conformance case). Callers holding a State use Step and
// Advance.

// AdvanceSnapshot is Advance on a snapshot as JSON or a State (what
// Restore reads), in the reference's order: the time is settled before
// the snapshot is validated. now nil means none, and the snapshot's own
// time member is used (a missing or null one as 0). A time that is not
// finite, or one before the snapshot's time member as JavaScript compares
// them (a member of another type read as a number), is JF2011 even when
// the snapshot is invalid; then the snapshot is restored and advanced.
func (c *Chart) AdvanceSnapshot(snapshot any, now *float64, opts AdvanceOptions) (Result, error) {
	var raw any
	var hasTime bool
	switch x := snapshot.(type) {
	case State:
		raw, hasTime = x.Time, true
	case *State:
		if x != nil {
			raw, hasTime = x.Time, true
		}
	default:
		raw, hasTime = value.Member(snapshot, "time")
	}
	var at float64
	switch {
	case now != nil:
		at = *now
	case !hasTime || raw == nil:
	default:
		f, ok := raw.(float64)
		if !ok {
			return Result{}, errTime()
		}
		at = f
	}
	if !finite(at) || (hasTime && at < value.ToNumber(raw)) {
		return Result{}, errTime()
	}
	s, err := c.Restore(snapshot)
	if err != nil {
		return Result{}, err
	}
	return c.Advance(s, at, opts)
}

// StepSnapshot is Step on a snapshot as JSON or a State (what Restore
// reads) and an event as JSON, in the reference's order: an event that is
// not a string is JF2002 before the snapshot is read.
func (c *Chart) StepSnapshot(snapshot, event any, opts StepOptions) (Result, error) {
	name, ok := event.(string)
	if !ok {
		return Result{}, fault.NoPath(fault.JF2002, "event must be a string")
	}
	s, err := c.Restore(snapshot)
	if err != nil {
		return Result{}, err
	}
	return c.Step(s, name, opts)
}
