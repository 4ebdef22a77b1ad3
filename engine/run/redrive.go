package run

import (
	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/workflow"
)

// A redrive continues a failed run from its failed work activation: the
// activation is invoked again, as if its failure had been a retry. The
// task nodes that had succeeded keep their values (the checkpointed ones
// from Pending, the others from Kept); every other task node of the
// activation runs again with a fresh retry budget. Attempt numbers do not
// start again at 1: each attempt is invoked by a message whose Seq is at
// least its number, so numbering from the redrive's own Seq puts the new
// attempts above every earlier one, and no result or token of an earlier
// attempt can match them (or share their result's Nats-Msg-Id).

// redrive applies a KindRedrive message to a failed run.
func (r *reducer) redrive() error {
	if err := r.redrivable(); err != nil {
		return err
	}
	st := r.st
	// Kept stays until the activation's Work takes it, so that a redrive
	// failing before that keeps it for the next.
	st.Status, st.Error = StatusRunning, nil
	st.Redrives++
	if err := r.tick(); err != nil {
		return err
	}
	r.redriven = &redriven{base: int(st.Seq) - 1, kept: st.Kept}
	return r.drive()
}

// redriven is what a redrive hands the Work it rebuilds: the attempt
// number its attempts start above, and the values Kept held.
type redriven struct {
	base int
	kept Kept
}

// redrivable refuses a redrive of a run that did not fail at a work
// state's activation: what failed elsewhere (a guard, a visit limit, a
// transition) is the document's own doing, and would fail again.
func (r *reducer) redrivable() error {
	st := r.st
	id := r.active()
	code := ""
	if st.Error != nil {
		code = st.Error.Code
	}
	spec := r.wf.Spec(id)
	switch {
	case spec == nil || spec.Kind != workflow.KindWork:
		return reject("run %q failed in %s, which is not a work state (%s): a redrive invokes a failed work activation again, and this failure would recur", st.RunID, id, code)
	case code == string(fault.JF2015):
		return reject("run %q failed on a visit limit (JF2015) leaving %s: the limit is part of the document, and a redrive would exceed it again", st.RunID, id)
	case st.Pending != nil && (st.Pending.State != id || st.Pending.HasResult):
		return reject("run %q failed after the work activation of %s completed (%s): no activation failed that a redrive could invoke again", st.RunID, id, code)
	}
	return nil
}

// keep returns the outputs of the active work activation's task nodes
// that succeeded without a checkpoint, which a failed state keeps for a
// redrive (nil when there are none, so that a failure without such
// values is stored as before).
func (r *reducer) keep() Kept {
	w, p := r.st.Work, r.st.Pending
	if w == nil || p == nil || p.State != r.active() {
		return nil
	}
	d := r.wf.DAGs[p.State]
	if d == nil {
		return nil
	}
	var kept Kept
	for _, node := range sortedKeys(w.Values) {
		info, ok := d.Node(node)
		if !ok || info.Task == "" || d.Checkpoint(node) {
			continue
		}
		if kept == nil {
			kept = Kept{}
		}
		// as its worker wrote it, when a node still read it so
		v, ok := w.Ordered[node]
		if !ok {
			v = w.Values[node]
		}
		kept[node] = v
	}
	return kept
}

// ordinal is a's place among its node's attempts since the activation's
// Base: what the retry policy counts.
func (w *Work) ordinal(a *Attempt) int { return a.Attempt - w.Base }
