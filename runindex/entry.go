package runindex

import (
	"encoding/json"
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
//
// It reads only what an entry holds: the record's status and, of the
// state, its status, active states and (when the revision has search
// attributes) input and data (runrecord.ReadStateBrief), not the whole
// state (work values, results, history), whose decoding was most of an
// indexer's CPU per change. A record whose status does not match its
// state, or that it cannot read so, is decoded whole, as client.Decode
// reads it.
func Build(runID string, data []byte, rev uint64, updated time.Time, search SearchFunc) (*wire.IndexEntry, error) {
	e, ok, err := buildBrief(runID, data, rev, updated, search)
	if !ok {
		return buildWhole(runID, data, rev, updated, search)
	}
	if checkBuild.Load() {
		verifyBuilt(runID, data, rev, updated, search, e, err)
	}
	return e, err
}

// buildBrief is Build from what runrecord.ReadStateBrief reads; ok false
// when the record needs the whole decode (a tombstone, a status out of
// step with its state, anything run.Decode would refuse or read
// otherwise).
func buildBrief(runID string, data []byte, rev uint64, updated time.Time, search SearchFunc) (*wire.IndexEntry, bool, error) {
	rec, err := runrecord.Decode(data)
	if err != nil || rec.Status == nil {
		return nil, false, nil
	}
	b, ok := runrecord.ReadStateBrief(rec.State)
	if !ok || b.Status != rec.Status.Status || b.RunID == "" || !b.Results || !b.Visits || len(b.Active) == 0 {
		return nil, false, nil
	}
	return runEntry(runID, rev, updated, rec.Status, rec.Order.First(), b.Active, search, func() (any, any, bool) {
		input, ok1 := decodeAny(b.Input)
		data, ok2 := decodeAny(b.Data)
		return input, data, ok1 && ok2
	})
}

// decodeAny decodes raw JSON as encoding/json decodes it into an any; nil
// for a member that was absent.
func decodeAny(raw []byte) (any, bool) {
	var v any
	if raw == nil {
		return nil, true
	}
	return v, json.Unmarshal(raw, &v) == nil
}

// buildWhole is Build from the whole decoded run.
func buildWhole(runID string, data []byte, rev uint64, updated time.Time, search SearchFunc) (*wire.IndexEntry, error) {
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
	e, _, err = runEntry(runID, rev, updated, r.Status, r.StartSeq, r.State.Control.Active, search, func() (any, any, bool) {
		return r.State.Context.Input, r.State.Context.Data, true
	})
	return e, err
}

// runEntry is a live run's entry, from what both readings of its record
// give: its status, its start's sequence, its active states, and its
// input and data (values), asked for only when the revision declares
// search attributes; ok false when values cannot give them.
func runEntry(runID string, rev uint64, updated time.Time, s *wire.Status, startSeq uint64, active []string, search SearchFunc, values func() (input, data any, ok bool)) (*wire.IndexEntry, bool, error) {
	e := &wire.IndexEntry{
		Run: runID, RecordRev: rev, Updated: updated.UnixNano(), StartSeq: startSeq,
		Workflow: s.Workflow, Revision: s.Revision, Status: s.Status, State: s.State, Time: s.Time,
	}
	if len(active) != 1 || active[0] != s.State {
		e.Active = active
	}
	paths, err := search(s.Workflow, s.Revision)
	if err != nil {
		return nil, true, &searchError{run: runID, workflow: s.Workflow, revision: s.Revision, err: err}
	}
	if len(paths) > 0 {
		input, data, ok := values()
		if !ok {
			return nil, false, nil
		}
		e.Search = client.SearchValues(input, data, paths)
	}
	return e, true, nil
}

// searchError is a revision's search attributes that could not be read
// (the registry did not answer): unlike a record that cannot be decoded,
// the change is indexed once they can be.
type searchError struct {
	run, workflow, revision string
	err                     error
}

func (e *searchError) Error() string {
	return fmt.Sprintf("run %s: search attributes of %s@%s: %v", e.run, e.workflow, e.revision, e.err)
}

func (e *searchError) Unwrap() error { return e.err }

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
