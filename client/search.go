package client

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/subjects"
)

// SearchFunc returns the search attributes (name to JSON Pointer into
// {"input", "data"}) that apply to the runs of workflow at revision; nil
// when none. runindex.RegistrySearch reads them from the deployments.
type SearchFunc func(workflow, revision string) (map[string]string, error)

// SearchValues is the run's search attributes: for each name paths
// declares, the scalar at its pointer in {"input", "data"} (Lookup); a
// name without a value is left out. nil when none.
func SearchValues(input, data any, paths map[string]string) map[string]string {
	if len(paths) == 0 {
		return nil
	}
	doc := map[string]any{"input": input, "data": data}
	var out map[string]string
	for _, name := range slices.Sorted(maps.Keys(paths)) {
		if v, ok := Lookup(doc, paths[name]); ok {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = v
		}
	}
	return out
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

// ParseWhere reads search attribute conditions written NAME=VALUE (the
// CLI's --where, the console's filter box), refusing a bad name and two
// values for one name; nil when conds is empty. Each error wraps
// ErrBadFilter and quotes the condition.
func ParseWhere(conds []string) (map[string]string, error) {
	var out map[string]string
	for _, w := range conds {
		name, value, ok := strings.Cut(w, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%w: where %q: want NAME=VALUE, such as customer=c-7", ErrBadFilter, w)
		}
		if err := subjects.CheckSearchName(name); err != nil {
			return nil, fmt.Errorf("%w: where %q: %w", ErrBadFilter, w, err)
		}
		if prev, dup := out[name]; dup && prev != value {
			return nil, fmt.Errorf("%w: where %q: %s is already %q; a run has one value per attribute", ErrBadFilter, w, name, prev)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[name] = value
	}
	return out, nil
}

// whereNames is the names of a filter's search attribute conditions, in
// order.
func whereNames(w map[string]string) []string { return slices.Sorted(maps.Keys(w)) }
