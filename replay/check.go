package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/runrecord"
)

// Report compares a rebuilt state with the saved one.
type Report struct {
	Info Info
	// Equal: the rebuilt state's bytes are the saved state's (and Check: its
	// links to a parent and children are the saved ones).
	Equal bool
	// Divergence is the JSON Pointer of the first difference (keys in
	// sorted order), with the value at it on each side as compact JSON
	// ("" for absent). It is empty when equal, or when only the bytes
	// differ and the values do not.
	Divergence               string
	SavedValue, RebuiltValue string
	// Saved and Rebuilt are the two states' stored bytes (nil if none).
	Saved, Rebuilt []byte
	// Action is what Restore did: ActionCreated, ActionUpdated or
	// ActionUnchanged; empty after Check. Revision is the record's
	// revision after it.
	Action   string
	Revision uint64
}

// Restore actions.
const (
	ActionCreated   = "created"
	ActionUpdated   = "updated"
	ActionUnchanged = "unchanged"
)

// Check rebuilds the run and compares it with its saved record. A run
// with no record gives ErrNoRecord (Restore writes one).
func Check(ctx context.Context, src Source, runID string) (Report, error) {
	if err := checkSource(src, runID); err != nil {
		return Report{}, err
	}
	if src.Runs == nil {
		return Report{}, errors.New("replay: Check needs Source.Runs, the run bucket")
	}
	sv, err := loadSaved(ctx, src, runID)
	if err != nil {
		return Report{}, err
	}
	if !sv.found {
		return Report{}, fmt.Errorf("replay: run %s: %w in bucket (restore writes one from the history): %w", runID, ErrNoRecord, kvstore.ErrRunNotFound)
	}
	if sv.rec == nil {
		return Report{}, fmt.Errorf("replay: run %s: saved record unreadable: %w", runID, sv.err)
	}
	r, info, err := rebuild(ctx, src, runID, sv)
	if err != nil {
		return Report{Info: info}, err
	}
	rep := compare(info, sv.rec.State, r.Record.State)
	if rep.Equal {
		// A parent's child links and a child's parent link are made by
		// the step too (docs/CHILDREN.md): the replay rebuilds them.
		rep = compareLinks(rep, sv.rec, r.Record)
	}
	return rep, nil
}

// compareLinks marks rep unequal when the saved and rebuilt records link
// other runs differently, the pointer under "/$links".
func compareLinks(rep Report, saved, rebuilt *runrecord.Record) Report {
	if saved.Parent == nil && rebuilt.Parent == nil && len(saved.Children) == 0 && len(rebuilt.Children) == 0 {
		return rep
	}
	links := func(r *runrecord.Record) []byte {
		b, _ := json.Marshal(map[string]any{"parent": r.Parent, "children": r.Children})
		return b
	}
	a, b := links(saved), links(rebuilt)
	if !bytes.Equal(a, b) {
		ptr, av, bv := Diverge(a, b)
		rep.Equal, rep.Divergence, rep.SavedValue, rep.RebuiltValue = false, "/$links"+ptr, av, bv
	}
	return rep
}

// Restore rebuilds the run and writes the rebuilt record back: it
// creates the record when the run bucket lost it, replaces a record that
// does not decode or whose state differs (compare-and-swap on the
// revision read, so a dispatcher's concurrent write wins and Restore
// fails), and leaves an equal one alone. The record keeps the
// dispatcher's format, outbox included, so the next input of the run
// publishes what the last step owed, as after any crash.
func Restore(ctx context.Context, src Source, runID string) (Report, error) {
	if err := checkSource(src, runID); err != nil {
		return Report{}, err
	}
	if src.Runs == nil {
		return Report{}, errors.New("replay: Restore needs Source.Runs, the run bucket")
	}
	sv, err := loadSaved(ctx, src, runID)
	if err != nil {
		return Report{}, err
	}
	r, info, err := rebuild(ctx, src, runID, sv)
	if err != nil {
		return Report{Info: info}, err
	}
	var savedState []byte
	if sv.rec != nil {
		savedState = sv.rec.State
	}
	rep := compare(info, savedState, r.Record.State)
	if sv.rec != nil && rep.Equal {
		rep.Action, rep.Revision = ActionUnchanged, sv.rev
		return rep, nil
	}
	data, err := r.Record.Encode()
	if err != nil {
		return rep, fmt.Errorf("replay: encode the rebuilt record of run %s: %w", runID, err)
	}
	if sv.found {
		rep.Action = ActionUpdated
		rep.Revision, err = src.Runs.Update(ctx, runID, data, sv.rev)
	} else {
		rep.Action = ActionCreated
		rep.Revision, err = src.Runs.Create(ctx, runID, data)
	}
	if err != nil {
		return rep, fmt.Errorf("replay: write the rebuilt record of run %s: %w", runID, err)
	}
	return rep, nil
}

func compare(info Info, saved, rebuilt []byte) Report {
	rep := Report{Info: info, Saved: saved, Rebuilt: rebuilt, Equal: bytes.Equal(saved, rebuilt)}
	if !rep.Equal {
		rep.Divergence, rep.SavedValue, rep.RebuiltValue = Diverge(saved, rebuilt)
	}
	return rep
}

// State decodes a report's rebuilt state.
func (r Report) State() (*run.State, error) { return run.Decode(r.Rebuilt) }
