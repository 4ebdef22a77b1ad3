package jslt

import (
	"errors"
	"strconv"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
)

// run is one transformation: the input root, the parameters, the budget
// every body charges, and each mode's match pre-pass, built on first use.
type run struct {
	s       *Stylesheet
	root    any
	ext     map[string]any
	b       *query.Budget
	prepass map[*mode]map[string][]bool
}

// Transform applies the stylesheet to data (§5.1) and returns the result
// as the reference's transform does: ok false for the empty sequence, the
// item for one, a []any of the items for more. ext binds stylesheet
// parameters by name. Every rule body charges b (a fresh default Budget
// when nil), so one limit bounds the whole transformation.
func (s *Stylesheet) Transform(b *query.Budget, data any, ext map[string]any) (any, bool, error) {
	if len(s.root.rules) == 0 && s.root.unmatched == share {
		return data, true, nil // the empty stylesheet is the identity
	}
	if b == nil {
		b = &query.Budget{}
	}
	r := &run{s: s, root: data, ext: ext, b: b}
	loc, located := "", false
	if s.needsLoc {
		loc, located = "$", true
	}
	items, err := r.dispatch(data, loc, located, s.root, 0)
	if err != nil {
		return nil, false, err
	}
	switch len(items) {
	case 0:
		return nil, false, nil
	case 1:
		return items[0], true, nil
	}
	return items, true, nil
}

// dispatch finds and fires the winning rule of m for v (§5.1), or the
// built-in rule.
func (r *run) dispatch(v any, loc string, located bool, m *mode, depth int) ([]any, *fault.Error) {
	if depth > MaxDepth {
		// The reference's JavaScript stack runs out before its depth guard
		// on every recursion a document can express, and it reports that.
		return nil, fault.New(fault.JT2001,
			"dispatch recursion exhausted the host call stack before maxDepth "+strconv.Itoa(MaxDepth),
			r.s.root.unmatchedPath)
	}
	var matched []bool
	if located && len(m.paths) > 0 {
		matched = r.matches(m)[loc]
	}
	for _, rl := range m.rules {
		if rl.hasPath && (matched == nil || !matched[rl.ordinal]) {
			continue
		}
		return r.fire(rl, v, loc, located, depth)
	}
	return r.builtIn(v, loc, located, m, depth)
}

// matches returns the mode's pre-pass: for each location its path rules
// select in the input, which of them do (§3.4).
func (r *run) matches(m *mode) map[string][]bool {
	if set, ok := r.prepass[m]; ok {
		return set
	}
	set := map[string][]bool{}
	for i, rl := range m.paths {
		for _, loc := range rl.path.Locations(r.root) {
			bits := set[loc]
			if bits == nil {
				bits = make([]bool, len(m.paths))
				set[loc] = bits
			}
			bits[i] = true
		}
	}
	if r.prepass == nil {
		r.prepass = map[*mode]map[string][]bool{}
	}
	r.prepass[m] = set
	return set
}

// fire evaluates a rule's body with v as $; a query error becomes JT2004
// naming the rule and the location, an error of a nested dispatch passes
// through unwrapped.
func (r *run) fire(rl *rule, v any, loc string, located bool, depth int) ([]any, *fault.Error) {
	h := &host{r: r, loc: loc, located: located, depth: depth}
	items, err := rl.body.Hosted(r.b, h, v)
	if err == nil {
		return items, nil
	}
	inner, ok := errors.AsType[*fault.Error](err)
	if !ok {
		inner = fault.NoPath(fault.JQ2001, err.Error())
	}
	if inner.Code[:2] == "JT" {
		return nil, inner
	}
	where := "a location-less value"
	if located {
		where = "location " + loc
	}
	return nil, fault.Wrap(fault.JT2004, "rule "+rl.docPath+" failed at "+where+": "+inner.Error(),
		rl.bodyDocPath+inner.Path, inner)
}

func describe(loc string, located bool) string {
	if located {
		return loc
	}
	return "a location-less value"
}

// builtIn is the mode's disposition for a value no rule matched (§5.1):
// an error, the scalar itself, or the container rebuilt from the dispatch
// of every child.
func (r *run) builtIn(v any, loc string, located bool, m *mode, depth int) ([]any, *fault.Error) {
	if m.unmatched == errorDisposition {
		return nil, fault.New(fault.JT2003,
			"no rule in mode "+value.Stringify(m.name)+" matched "+describe(loc, located), m.unmatchedPath)
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range value.Keys(x) {
			childLoc := ""
			if located {
				childLoc = query.NameLoc(loc, k)
			}
			items, err := r.dispatch(x[k], childLoc, located, m, depth+1)
			if err != nil {
				return nil, err
			}
			switch len(items) {
			case 0:
			case 1:
				out[k] = items[0]
			default:
				return nil, fault.New(fault.JT2002, "member '"+k+"' at "+describe(childLoc, located)+
					" produced "+strconv.Itoa(len(items))+" items", m.unmatchedPath)
			}
		}
		return []any{out}, nil
	case []any:
		out := make([]any, 0, len(x))
		for i, e := range x {
			childLoc := ""
			if located {
				childLoc = query.IndexLoc(loc, i)
			}
			items, err := r.dispatch(e, childLoc, located, m, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, items...)
		}
		return []any{out}, nil
	}
	return []any{v}, nil
}

// host is one body evaluation as its $apply and its externals see it.
type host struct {
	r       *run
	loc     string
	located bool
	depth   int
}

func (h *host) External(name string) (any, bool) {
	switch name {
	case "root":
		return h.r.root, true
	case "path":
		if h.located {
			return h.loc, true
		}
		return nil, true
	}
	v, ok := h.r.ext[name]
	return v, ok
}

func (h *host) Location() (string, bool) { return h.loc, h.located }

func (h *host) Tracking() bool { return h.r.s.needsLoc }

func (h *host) Apply(items []any, locs []string, name string) ([]any, *fault.Error) {
	m := h.r.s.modes[name]
	var out []any
	for i, item := range items {
		loc, located := "", false
		if locs != nil {
			loc, located = locs[i], true
		}
		res, err := h.r.dispatch(item, loc, located, m, h.depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, res...)
	}
	return out, nil
}
