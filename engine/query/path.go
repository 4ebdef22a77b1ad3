package query

import (
	"github.com/theory/jsonpath/spec"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// jsonPath is a parsed RFC 9535 query. The outermost query's segments
// come from github.com/theory/jsonpath; the syntax walk (pathsyntax.go)
// decides what parses, and builds the filters and the queries inside
// them, which are evaluated as the reference evaluates them
// (filtereval.go). Segment traversal is ours, because that library walks
// Go maps in random order and the query language needs document order
// (value.Keys, the order the reference's JavaScript objects iterate in)
// for wildcards, filters and descendants.
type jsonPath struct {
	segs []*spec.Segment
	// sels are each segment's selectors, a filter selector replaced by a
	// pathFilter
	sels [][]spec.Selector
	// steps is non-nil for a singular query (names and indexes only),
	// which walks without allocating.
	steps []singular
	// lead are the names and indexes any other query begins with, walked
	// the same way before its first list is made
	lead []singular
}

type singular struct {
	name  string
	index int
	isIdx bool
}

func parsePath(src, original, docPath string) *jsonPath {
	p, detail := parseRFC(src)
	if p == nil {
		fail(fault.JQ0004, "'"+original+"' is not a valid path: "+detail, docPath)
	}
	return p
}

// parseRFC parses an RFC 9535 query as the reference's parser does; on
// failure it returns the reference's detail. The segments are the walk's
// (pathsyntax.go), its filters with them (filtereval.go).
func parseRFC(src string) (*jsonPath, string) {
	w, msg := walkPath(src)
	if msg != "" {
		return nil, msg
	}
	return pathOfSegments(w.segs), ""
}

// pathOfSegments makes segments the walk built a path; its filter
// selectors are already pathFilters.
func pathOfSegments(segs []*spec.Segment) *jsonPath {
	jp := &jsonPath{segs: segs}
	for _, seg := range segs {
		jp.sels = append(jp.sels, seg.Selectors())
	}
	return jp.withSteps()
}

// withSteps sets the names and indexes jp starts with, or is.
func (jp *jsonPath) withSteps() *jsonPath {
	jp.lead = leadingSteps(jp.segs)
	if len(jp.lead) == len(jp.segs) {
		jp.steps, jp.lead = jp.lead, nil
	}
	return jp
}

// leadingSteps returns the names and indexes segs begin with, up to the
// first segment that is a descendant one or has another selector or more
// than one.
func leadingSteps(segs []*spec.Segment) []singular {
	steps := make([]singular, 0, len(segs))
	for _, seg := range segs {
		sels := seg.Selectors()
		if seg.IsDescendant() || len(sels) != 1 {
			return steps
		}
		switch s := sels[0].(type) {
		case spec.Name:
			steps = append(steps, singular{name: string(s)})
		case spec.Index:
			steps = append(steps, singular{index: int(s), isIdx: true})
		default:
			return steps
		}
	}
	return steps
}

// picks reports whether sels selects by name and index only (at most
// one result per selector).
func picks(sels []spec.Selector) bool {
	for _, sel := range sels {
		switch sel.(type) {
		case spec.Name, spec.Index:
		default:
			return false
		}
	}
	return true
}

// getter evaluates the path against each item of the root slot's value;
// filters see the input document as '$' (§3.2).
func (p *jsonPath) getter(slot int, external bool, name, docPath string) getter {
	base := varGetter(slot, external, name, docPath)
	return func(f *frame) any {
		acc, one, found, walked := p.nodes(f, base(f), docPath)
		if !walked {
			return seqOf(acc)
		}
		if !found {
			return empty
		}
		return one
	}
}

// matcher is getter asking only whether the path selects a node, the
// empty marker (one.go) included: $exists and $empty of a path. It
// charges what getter charges.
func (p *jsonPath) matcher(slot int, external bool, name, docPath string) getter {
	base := varGetter(slot, external, name, docPath)
	return func(f *frame) any {
		acc, _, found, walked := p.nodes(f, base(f), docPath)
		if walked {
			return found
		}
		return len(acc) > 0
	}
}

// nodes selects the path's nodes in b (in each item of a sequence) and
// charges them; over one item, a path of plain steps walks to its one
// node instead (walked; found says whether there is one).
func (p *jsonPath) nodes(f *frame, b any, docPath string) (acc []any, one any, found, walked bool) {
	switch x := b.(type) {
	case emptySeq:
		return nil, nil, false, false
	case *multi:
		root := p.root(f)
		for _, item := range x.items() {
			acc = p.selectInto(acc, item, root)
		}
		f.charge(len(acc), docPath)
		return acc, nil, false, false
	}
	if p.steps != nil {
		one, found = p.walk(b)
		return nil, one, found, true
	}
	acc = p.selectInto(nil, b, p.root(f))
	f.charge(len(acc), docPath)
	return acc, nil, false, false
}

// root is the input document as filters read it: '$' as maps.
func (p *jsonPath) root(f *frame) any {
	if f.holding {
		return value.Plain(f.slots[0])
	}
	return f.slots[0]
}

func (p *jsonPath) walk(v any) (any, bool) { return walkSteps(p.steps, v) }

func walkSteps(steps []singular, v any) (any, bool) {
	for _, s := range steps {
		if s.isIdx {
			arr, ok := v.([]any)
			if !ok {
				return nil, false
			}
			i := s.index
			if i < 0 {
				i += len(arr)
			}
			if i < 0 || i >= len(arr) {
				return nil, false
			}
			v = arr[i]
			continue
		}
		var ok bool
		if obj, isMap := v.(map[string]any); isMap {
			v, ok = obj[s.name]
		} else {
			v, ok = value.Member(v, s.name)
		}
		if !ok {
			return nil, false
		}
	}
	return v, true
}

func (p *jsonPath) selectInto(acc []any, cur, root any) []any {
	if p.steps != nil {
		if v, ok := p.walk(cur); ok {
			return append(acc, v)
		}
		return acc
	}
	// the leading names and indexes select one value or none, without a
	// list; each segment after them makes a list of its own, so the last
	// one's can be the answer when there is nothing to add it to
	first := len(p.lead)
	if first > 0 {
		v, ok := walkSteps(p.lead, cur)
		if !ok {
			return acc
		}
		cur = v
	}
	var nodes []any
	for n := first; n < len(p.segs); n++ {
		var next []any
		sels := p.sels[n]
		switch {
		case n == first && p.segs[n].IsDescendant():
			next = descend(next, cur, root, sels)
		case n == first:
			next = applySelectors(next, cur, root, sels)
		case p.segs[n].IsDescendant():
			for _, n := range nodes {
				next = descend(next, n, root, sels)
			}
		default:
			if picks(sels) {
				next = make([]any, 0, len(nodes)*len(sels))
			}
			for _, n := range nodes {
				next = applySelectors(next, n, root, sels)
			}
		}
		nodes = next
		if len(nodes) == 0 {
			return acc
		}
	}
	if len(acc) == 0 {
		return nodes
	}
	return append(acc, nodes...)
}

// descend applies the selectors to v and then to every descendant, in
// document order (RFC 9535 §2.5.2).
func descend(out []any, v, root any, sels []spec.Selector) []any {
	out = applySelectors(out, v, root, sels)
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			out = descend(out, e, root, sels)
		}
	case map[string]any:
		for _, k := range value.Keys(x) {
			out = descend(out, x[k], root, sels)
		}
	case *value.Object:
		for i := range x.Len() {
			_, e := x.At(i)
			out = descend(out, e, root, sels)
		}
	}
	return out
}

func applySelectors(out []any, v, root any, sels []spec.Selector) []any {
	for _, sel := range sels {
		switch s := sel.(type) {
		case spec.WildcardSelector:
			switch x := v.(type) {
			case []any:
				out = append(out, x...)
			case map[string]any:
				for _, k := range value.Keys(x) {
					out = append(out, x[k])
				}
			case *value.Object:
				for i := range x.Len() {
					_, e := x.At(i)
					out = append(out, e)
				}
			}
		case *pathFilter:
			switch x := v.(type) {
			case []any:
				for _, e := range x {
					if s.holds(e, root) {
						out = append(out, e)
					}
				}
			case map[string]any:
				for _, k := range value.Keys(x) {
					if s.holds(x[k], root) {
						out = append(out, x[k])
					}
				}
			case *value.Object:
				for i := range x.Len() {
					if _, e := x.At(i); s.holds(e, root) {
						out = append(out, e)
					}
				}
			}
		case spec.Name:
			if e, ok := value.Member(v, string(s)); ok {
				out = append(out, e)
			}
		default:
			if _, ok := v.([]any); ok {
				out = append(out, sel.Select(v, root)...)
			}
		}
	}
	return out
}
