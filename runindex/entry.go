package runindex

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// SearchFunc returns the search attributes (name to JSON Pointer) that
// apply to the runs of workflow at revision; nil when none.
type SearchFunc = client.SearchFunc

// Build is a run's index entry, from its record (or tombstone) as the run
// bucket stored it at revision rev and time updated. A tombstone gives a
// StatusRemoved entry without search attributes that expires with the
// tombstone (Expires).
func Build(runID string, data []byte, rev uint64, updated time.Time, search SearchFunc) (*wire.IndexEntry, error) {
	e := &wire.IndexEntry{Run: runID, RecordRev: rev, Updated: updated.UnixNano()}
	r, err := client.Decode(runID, data)
	var removed *runrecord.RemovedError
	if errors.As(err, &removed) {
		e.Workflow, e.Revision, e.Status, e.Time = removed.Removed.Workflow, removed.Removed.Revision, wire.StatusRemoved, removed.Removed.At
		e.Expires = int64(removed.Removed.Until)
		return e, nil
	}
	if err != nil {
		return nil, err
	}
	s := r.Status
	e.Workflow, e.Revision, e.Status, e.State, e.Time, e.StartSeq = s.Workflow, s.Revision, s.Status, s.State, s.Time, r.StartSeq
	if a := r.State.Control.Active; len(a) != 1 || a[0] != s.State {
		e.Active = a
	}
	paths, err := search(s.Workflow, s.Revision)
	if err != nil {
		return nil, fmt.Errorf("run %s: search attributes of %s@%s: %w", runID, s.Workflow, s.Revision, err)
	}
	e.Search = client.SearchValues(r.State.Context.Input, r.State.Context.Data, paths)
	return e, nil
}

// Head is the head of a run indexed from entry e (nil: deleted) made
// from record revision rev.
func Head(e *wire.IndexEntry, rev uint64) *wire.IndexHead {
	h := &wire.IndexHead{RecordRev: rev, Shape: subjects.IndexShape}
	if e != nil {
		h.Workflow, h.Status, h.StartSeq, h.Search, h.Expires = e.Workflow, e.Status, e.StartSeq, e.Search, e.Expires
	}
	return h
}

// Subjects are the subjects a run's entry is kept under, as its head
// names them: its entry by update, its entry by start, then one per
// search attribute, in name order; none when the head is a deletion's.
// A head of shape 1 names the subjects of that shape.
func Subjects(names subjects.Names, run string, h *wire.IndexHead) []string {
	if h == nil || h.Workflow == "" {
		return nil
	}
	keys := make([]string, 0, len(h.Search))
	for k := range h.Search {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if h.Shape == 0 {
		out := []string{names.IndexEntryV1(h.Workflow, h.Status, run)}
		for _, k := range keys {
			out = append(out, names.IndexAttrV1(k, h.Search[k], h.Workflow, h.Status, run))
		}
		return out
	}
	out := []string{names.IndexEntry(h.Workflow, h.Status, h.RecordRev, run), names.IndexStart(h.Workflow, h.Status, h.StartSeq, run)}
	for _, k := range keys {
		out = append(out, names.IndexAttr(k, h.Search[k], h.Workflow, h.Status, h.RecordRev, run))
	}
	return out
}
