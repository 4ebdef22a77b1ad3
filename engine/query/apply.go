package query

import (
	"strconv"
	"strings"

	"github.com/theory/jsonpath"
	"github.com/theory/jsonpath/spec"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// ApplyOperator makes $apply an operator of the document being compiled:
// the one extension a JSLT rule body has over a query (JSLT-FORMAT §6).
// Plain queries never set it, so for them $apply stays JQ0002.
type ApplyOperator struct {
	// Mode is the rule's own mode, the target of an $apply naming none.
	Mode string
	// Target is told each $apply's target mode at compile time, so that
	// the stylesheet knows every mode a body can dispatch into.
	Target func(mode string)
}

// Host is the transformation a rule body runs in. A body compiled with
// an ApplyOperator must be evaluated through Hosted.
type Host interface {
	// External binds an external variable of the body: the reserved
	// root and path, or a stylesheet parameter (ok false: unbound).
	External(name string) (v any, ok bool)
	// Location is the current value's normalized path; ok is false when
	// it has none or when the stylesheet tracks no locations.
	Location() (loc string, ok bool)
	// Tracking reports whether the stylesheet tracks locations at all.
	Tracking() bool
	// Apply dispatches each item in mode, in order, and returns the
	// concatenated results. locs is nil for location-less items. Its
	// error is returned unchanged from the body's evaluation.
	Apply(items []any, locs []string, mode string) ([]any, *fault.Error)
}

// Hosted evaluates a rule body for h, charging b (the query's own limits
// when nil), and returns its result sequence.
func (q *Query) Hosted(b *Budget, h Host, data any) ([]any, error) {
	f := &frame{stepsLeft: q.lim.Steps, bytesLeft: q.lim.Bytes, lim: &q.lim, host: h}
	if b != nil {
		f.budget = b
		f.stepsLeft, f.bytesLeft = b.stepLimit()-b.steps, b.byteLimit()-b.bytes
	}
	if q.frameSize <= len(f.buf) {
		f.slots = f.buf[:q.frameSize]
	} else {
		f.slots = make([]any, q.frameSize)
	}
	f.slots[0] = data
	for i, name := range q.externals {
		if x, ok := h.External(name); ok {
			f.slots[q.extSlots[i]] = x
		} else {
			f.slots[q.extSlots[i]] = unboundT{}
		}
	}
	return q.hostedRun(f, b)
}

func (q *Query) hostedRun(f *frame, b *Budget) (items []any, err error) {
	defer func() {
		if b != nil {
			b.steps, b.bytes = b.stepLimit()-f.stepsLeft, b.byteLimit()-f.bytesLeft
		}
		if r := recover(); r != nil {
			re, ok := r.(runtimeError)
			if !ok {
				panic(r)
			}
			items, err = nil, re.err
		}
	}()
	items = itemsOf(q.root(f))
	if err := q.checkResult(len(items)); err != nil {
		return nil, err
	}
	return items, nil
}

// applyOp compiles {"$apply": selector} and {"$apply": [selector, mode?]}.
// A selector that is a path rooted at $ or at the external $root keeps
// the locations of what it selects (JSLT-FORMAT §6.4).
func (c *compiler) applyOp(arg any, opPath string, sc *scope, depth int) getter {
	mode := c.apply.Mode
	sel, selPath := arg, opPath
	list, isList := arg.([]any)
	if isList {
		if len(list) < 1 || len(list) > 2 {
			fail(fault.JQ0003, "'$apply' takes [selector] or [selector, mode]", opPath)
		}
		sel, selPath = list[0], opPath+"/0"
	}
	get := c.expr(sel, selPath, sc, depth+1)
	if isList && len(list) == 2 {
		m, ok := list[1].(string)
		if !ok {
			fail(fault.JQ0003, "the '$apply' mode must be a literal string", opPath+"/1")
		}
		mode = m
	}
	c.apply.Target(mode)
	located, fromRoot, rootSlot := c.locatedSelector(sel, selPath, sc)
	return func(f *frame) any {
		h := f.host
		if located != nil && h.Tracking() {
			base, baseLoc, ok := f.slots[0], "", true
			if fromRoot {
				base, baseLoc = f.slots[rootSlot], "$"
			} else {
				baseLoc, ok = h.Location()
			}
			if ok {
				vals, locs := located.selectLocated(base, baseLoc, f.slots[0])
				f.charge(len(vals), selPath)
				return applied(f, h, vals, locs, mode)
			}
		}
		return applied(f, h, itemsOf(get(f)), nil, mode)
	}
}

// applied dispatches items through the host. The nested bodies charge
// the same budget, so the frame settles what it spent before and takes
// up what is left after.
func applied(f *frame, h Host, items []any, locs []string, mode string) any {
	b := f.budget
	if b != nil {
		b.steps, b.bytes = b.stepLimit()-f.stepsLeft, b.byteLimit()-f.bytesLeft
	}
	out, err := h.Apply(items, locs, mode)
	if b != nil {
		f.stepsLeft, f.bytesLeft = b.stepLimit()-b.steps, b.byteLimit()-b.bytes
	}
	if err != nil {
		panic(runtimeError{err})
	}
	return seqOf(out)
}

// locatedSelector returns the path of a selector that keeps locations:
// "$…" from the current value, "$root…" (root unshadowed) from the root.
func (c *compiler) locatedSelector(sel any, selPath string, sc *scope) (p *jsonPath, fromRoot bool, rootSlot int) {
	s, ok := sel.(string)
	if !ok || s == "" || s[0] != '$' {
		return nil, false, 0
	}
	if s == "$" || s[1] == '.' || s[1] == '[' {
		return parsePath(s, s, selPath), false, 0
	}
	if !strings.HasPrefix(s, "$root") {
		return nil, false, 0
	}
	m := varHeadRE.FindStringSubmatch(s)
	if m == nil || m[1] != "root" {
		return nil, false, 0
	}
	slot, external := c.resolve("root", sc)
	if !external {
		return nil, false, 0
	}
	return parsePath("$"+s[len(m[0]):], s, selPath), true, slot
}

// selectLocated is selectInto keeping each result's normalized path
// (RFC 9535 §2.7), extending loc.
func (p *jsonPath) selectLocated(cur any, loc string, root any) ([]any, []string) {
	vals, locs := []any{cur}, []string{loc}
	for _, seg := range p.segs {
		var nv []any
		var nl []string
		sels := seg.Selectors()
		for i, v := range vals {
			if seg.IsDescendant() {
				nv, nl = descendLocated(nv, nl, v, locs[i], root, sels)
			} else {
				nv, nl = selectorsLocated(nv, nl, v, locs[i], root, sels)
			}
		}
		vals, locs = nv, nl
		if len(vals) == 0 {
			break
		}
	}
	return vals, locs
}

func descendLocated(nv []any, nl []string, v any, loc string, root any, sels []spec.Selector) ([]any, []string) {
	nv, nl = selectorsLocated(nv, nl, v, loc, root, sels)
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			nv, nl = descendLocated(nv, nl, e, IndexLoc(loc, i), root, sels)
		}
	case map[string]any:
		for _, k := range value.Keys(x) {
			nv, nl = descendLocated(nv, nl, x[k], NameLoc(loc, k), root, sels)
		}
	}
	return nv, nl
}

func selectorsLocated(nv []any, nl []string, v any, loc string, root any, sels []spec.Selector) ([]any, []string) {
	arr, isArr := v.([]any)
	obj, isObj := v.(map[string]any)
	for _, sel := range sels {
		switch s := sel.(type) {
		case spec.Name:
			if e, ok := obj[string(s)]; isObj && ok {
				nv, nl = append(nv, e), append(nl, NameLoc(loc, string(s)))
			}
		case spec.Index:
			i := int(s)
			if i < 0 {
				i += len(arr)
			}
			if isArr && i >= 0 && i < len(arr) {
				nv, nl = append(nv, arr[i]), append(nl, IndexLoc(loc, i))
			}
		case spec.SliceSelector:
			if !isArr || s.Step() == 0 {
				continue
			}
			lower, upper := s.Bounds(len(arr))
			if s.Step() > 0 {
				for i := lower; i < upper; i += s.Step() {
					nv, nl = append(nv, arr[i]), append(nl, IndexLoc(loc, i))
				}
			} else {
				for i := upper; lower < i; i += s.Step() {
					nv, nl = append(nv, arr[i]), append(nl, IndexLoc(loc, i))
				}
			}
		case spec.WildcardSelector:
			for i, e := range arr {
				nv, nl = append(nv, e), append(nl, IndexLoc(loc, i))
			}
			if isObj {
				for _, k := range value.Keys(obj) {
					nv, nl = append(nv, obj[k]), append(nl, NameLoc(loc, k))
				}
			}
		case *spec.FilterSelector:
			for i, e := range arr {
				if s.Eval(e, root) {
					nv, nl = append(nv, e), append(nl, IndexLoc(loc, i))
				}
			}
			if isObj {
				for _, k := range value.Keys(obj) {
					if s.Eval(obj[k], root) {
						nv, nl = append(nv, obj[k]), append(nl, NameLoc(loc, k))
					}
				}
			}
		}
	}
	return nv, nl
}

// Locations returns the normalized path of every value the RFC 9535 path
// src selects from root, for a JSLT match pre-pass (JSLT-FORMAT §3.4).
// Filters see root as '$'.
func Locations(src string, root any) ([]string, error) {
	p, err := ParsePath(src)
	if err != nil {
		return nil, err
	}
	return p.Locations(root), nil
}

// Path is a parsed RFC 9535 query.
type Path struct{ p *jsonPath }

// ParsePath parses an RFC 9535 query; the error is the parser's.
func ParsePath(src string) (*Path, error) {
	if _, err := jsonpath.Parse(src); err != nil {
		return nil, err
	}
	return &Path{parsePath(src, src, "")}, nil
}

// Locations returns the normalized path of every value p selects from
// root, filters seeing root as '$'.
func (p *Path) Locations(root any) []string {
	_, locs := p.p.selectLocated(root, "$", root)
	return locs
}

// NameLoc extends a normalized path by a member name, escaped as RFC 9535
// §2.7 and the reference escape it.
func NameLoc(loc, name string) string {
	var b strings.Builder
	b.Grow(len(loc) + len(name) + 4)
	b.WriteString(loc)
	b.WriteString("['")
	for _, r := range name {
		switch {
		case r == '\'':
			b.WriteString(`\'`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20:
			b.WriteString(`\u00`)
			if r < 0x10 {
				b.WriteByte('0')
			}
			b.WriteString(strconv.FormatInt(int64(r), 16))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteString("']")
	return b.String()
}

// IndexLoc extends a normalized path by an array index.
func IndexLoc(loc string, i int) string { return loc + "[" + strconv.Itoa(i) + "]" }
