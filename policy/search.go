package policy

import (
	"maps"
	"strings"

	"github.com/jetflow/jetflow/subjects"
)

// fieldSearch is the "$run" setting that declares search attributes:
// {"$run": {"search": {"customer": "/input/customer"}}}.
const fieldSearch = "search"

// MaxSearch is how many search attributes a deployment may declare: each
// is one more index entry per run.
const MaxSearch = 8

// Search is the deployment's search attributes: name to a JSON Pointer
// into the run's input ("/input/…") or context data ("/data/…"). The run
// index keeps each run's value under its name (package runindex). nil
// when the policy declares none.
func (p *Policy) Search() map[string]string {
	if p == nil || p.search == nil {
		return nil
	}
	return maps.Clone(p.search)
}

// parseSearch checks the "search" object: at most MaxSearch names, each
// a subject token, each mapped to a pointer under /input or /data.
func parseSearch(v any, ptr string) (map[string]string, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errAt(ptr, `must be an object of search attribute names and JSON Pointers, such as {"customer": "/input/customer"}, not %s`, describe(v))
	}
	if len(obj) > MaxSearch {
		return nil, errAt(ptr, "declares %d search attributes; at most %d (each is one more index entry per run)", len(obj), MaxSearch)
	}
	out := make(map[string]string, len(obj))
	for name, raw := range obj {
		nptr := ptr + "/" + strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
		if err := subjects.CheckSearchName(name); err != nil {
			return nil, errAt(nptr, "%v", err)
		}
		p, ok := raw.(string)
		if !ok || !(p == "/input" || p == "/data" || strings.HasPrefix(p, "/input/") || strings.HasPrefix(p, "/data/")) {
			return nil, errAt(nptr, `must be a JSON Pointer into the run's input or data, such as "/input/customer" or "/data/order/id", not %s`, describe(raw))
		}
		out[name] = p
	}
	return out, nil
}
