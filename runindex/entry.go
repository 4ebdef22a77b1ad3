package runindex

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// SearchFunc returns the search attributes (name to JSON Pointer) the
// deployment of workflow at revision declares; nil when none.
type SearchFunc func(workflow, revision string) (map[string]string, error)

// Build is a run's index entry, from its record (or tombstone) as the run
// bucket stored it at revision rev and time updated. A tombstone gives a
// StatusRemoved entry without search attributes.
func Build(runID string, data []byte, rev uint64, updated time.Time, search SearchFunc) (*wire.IndexEntry, error) {
	e := &wire.IndexEntry{Run: runID, RecordRev: rev, Updated: updated.UnixNano()}
	r, err := client.Decode(runID, data)
	var removed *runrecord.RemovedError
	if errors.As(err, &removed) {
		e.Workflow, e.Revision, e.Status, e.Time = removed.Removed.Workflow, removed.Removed.Revision, wire.StatusRemoved, removed.Removed.At
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
	if len(paths) > 0 {
		doc := map[string]any{"input": r.State.Context.Input, "data": r.State.Context.Data}
		for name, ptr := range paths {
			if v, ok := Lookup(doc, ptr); ok {
				if e.Search == nil {
					e.Search = map[string]string{}
				}
				e.Search[name] = v
			}
		}
	}
	return e, nil
}

// Lookup is the scalar at JSON Pointer ptr in doc, as a search value: a
// string as itself, a number or boolean as its JSON text. A missing
// value, null, an object or an array is no value.
func Lookup(doc any, ptr string) (string, bool) {
	v := doc
	for seg := range strings.SplitSeq(strings.TrimPrefix(ptr, "/"), "/") {
		seg = value.DecodePointerSegment(seg)
		switch t := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = t[seg]; !ok {
				return "", false
			}
		case []any:
			var i int
			if _, err := fmt.Sscanf(seg, "%d", &i); err != nil || fmt.Sprint(i) != seg || i < 0 || i >= len(t) {
				return "", false
			}
			v = t[i]
		default:
			return "", false
		}
	}
	switch t := v.(type) {
	case string:
		return t, true
	case nil, map[string]any, []any:
		return "", false
	default:
		s, err := value.Canonical(t)
		return s, err == nil
	}
}

// Subjects are the subjects a run's entry is kept under, as its head
// names them: its entry, then one per search attribute, in name order;
// none when the head is a deletion's.
func Subjects(names subjects.Names, run string, h *wire.IndexHead) []string {
	if h == nil || h.Workflow == "" {
		return nil
	}
	out := []string{names.IndexEntry(h.Workflow, h.Status, run)}
	keys := make([]string, 0, len(h.Search))
	for k := range h.Search {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, names.IndexAttr(k, h.Search[k], h.Workflow, h.Status, run))
	}
	return out
}
