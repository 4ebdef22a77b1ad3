package query

import (
	"slices"
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
	// Located reports whether the current value has a location, and
	// Tracking whether the stylesheet tracks locations at all.
	Located() bool
	Tracking() bool
	// Apply dispatches each item in mode, in order, and returns the
	// concatenated results. For located items, rel holds each one's
	// location relative to the current value, or to the root when
	// fromRoot; rel is nil for location-less items. holding says the
	// items may hold objects a body built (*value.Object), which the
	// bodies they reach must be told (Hosted). Its error is returned
	// unchanged from the body's evaluation.
	Apply(items []any, rel [][]Seg, fromRoot bool, mode string, holding bool) ([]any, *fault.Error)
	// Built reports whether a body of the transformation has returned an
	// object built at run time (a *value.Object, see Hosted).
	Built() bool
}

// Seg is one step of a location: a member name, or an array index
// (Index >= 0).
type Seg struct {
	Name  string
	Index int
}

// Hosted evaluates a rule body for h, charging b (the query's own limits
// when nil), and returns its result sequence: n items, the one in one
// when n is 1, all of them in many when n is 2 or more. Objects the body
// built keep their order as *value.Object (built is then true), so that
// the body that applied it walks them as the reference does; the
// transformation makes its own result plain (value.Plain). holding says
// data may hold such objects, built by another body that applied this
// one: the body walks them in their order, as the reference's does, and
// reads them as maps wherever it reads data (Evaluator.Holding).
func (q *Query) Hosted(b *Budget, h Host, data any, holding bool) (one any, many []any, n int, built bool, err error) {
	f := q.newFrame(data, b, h, h.External)
	if holding {
		f.built, f.holding = true, true
	}
	v, err := q.hostedRun(f, b)
	built = f.built
	*f = frame{}
	framePool.Put(f)
	if err != nil {
		return nil, nil, 0, false, err
	}
	switch x := v.(type) {
	case emptySeq:
		return nil, nil, 0, false, nil
	case *multi:
		if err := q.checkResult(x.len()); err != nil {
			return nil, nil, 0, false, err
		}
		return nil, x.items(), x.len(), built, nil
	}
	return v, nil, 1, built, nil
}

func (q *Query) hostedRun(f *frame, b *Budget) (v any, err error) {
	defer func() {
		if b != nil {
			b.steps, b.bytes = b.stepLimit()-f.stepsLeft, b.byteLimit()-f.bytesLeft
		}
		if r := recover(); r != nil {
			re, ok := r.(runtimeError)
			if !ok {
				panic(r)
			}
			v, err = nil, re.err
		}
	}()
	return q.root(f), nil
}

// Charge spends n steps of b on work done outside any query (a JSLT
// transformation's walk and match pre-pass), so that the budget bounds
// it too: JQ2009 at path once the steps are spent.
func (b *Budget) Charge(n int, path string) *fault.Error {
	b.steps += n
	if b.steps > b.stepLimit() {
		return fault.New(fault.JQ2009, "the transformation exceeded the step budget ("+strconv.Itoa(b.stepLimit())+
			" expression evaluations shared by every query of one run step)", path)
	}
	return nil
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
		if located != nil && h.Tracking() && (fromRoot || h.Located()) {
			base := f.slots[0]
			if fromRoot {
				base = f.slots[rootSlot]
			}
			vals, rel := located.selectLocated(base, f.slots[0], nil)
			f.charge(len(vals), selPath)
			return applied(f, h, vals, rel, fromRoot, mode)
		}
		return applied(f, h, itemsOf(get(f)), nil, false, mode)
	}
}

// applied dispatches items through the host. The nested bodies charge
// the same budget, so the frame settles what it spent before and takes
// up what is left after.
func applied(f *frame, h Host, items []any, rel [][]Seg, fromRoot bool, mode string) any {
	b := f.budget
	if b != nil {
		b.steps, b.bytes = b.stepLimit()-f.stepsLeft, b.byteLimit()-f.bytesLeft
	}
	// the items become the input of other bodies, which walk what this
	// one built in its order
	out, err := h.Apply(items, rel, fromRoot, mode, f.built)
	if h.Built() {
		f.built = true // what the bodies built may be among out
	}
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

// selectLocated is selectInto keeping each result's location relative
// to cur. With visit, the last segment's results are handed to it (the
// location valid during the call only) instead of being returned.
func (p *jsonPath) selectLocated(cur, root any, visit func([]Seg)) ([]any, [][]Seg) {
	var n int
	return p.selectLocatedCounting(cur, root, visit, &n)
}

// selectLocatedCounting is selectLocated adding to *looked the values
// whose selectors it applied.
func (p *jsonPath) selectLocatedCounting(cur, root any, visit func([]Seg), looked *int) ([]any, [][]Seg) {
	vals, rel := []any{cur}, [][]Seg{nil}
	if len(p.segs) == 0 && visit != nil {
		visit(nil)
		return nil, nil
	}
	for n, seg := range p.segs {
		w := locWalk{root: root, sels: p.sels[n]}
		if n == len(p.segs)-1 {
			w.visit = visit
		}
		for i, v := range vals {
			if seg.IsDescendant() {
				w.stack = append(make([]Seg, 0, len(rel[i])+8), rel[i]...)
				w.descend(v)
			} else {
				w.stack = rel[i]
				w.apply(v)
			}
		}
		vals, rel = w.vals, w.rel
		*looked += w.looked
		if len(vals) == 0 {
			break
		}
	}
	return vals, rel
}

// locWalk applies one segment's selectors, pushing the location of the
// value at hand on stack and copying it only for what is selected.
type locWalk struct {
	root   any
	sels   []spec.Selector
	stack  []Seg
	vals   []any
	rel    [][]Seg
	visit  func([]Seg)
	buf    []Seg // what visit is handed
	slab   []Seg // backs the paths in rel, capped so none grows into another
	looked int   // values the selectors were applied to
}

func (w *locWalk) add(v any, s Seg) {
	if w.visit != nil {
		w.buf = append(append(w.buf[:0], w.stack...), s)
		w.visit(w.buf)
		return
	}
	start := len(w.slab)
	w.slab = append(append(w.slab, w.stack...), s)
	path := w.slab[start:len(w.slab):len(w.slab)]
	w.vals, w.rel = append(w.vals, v), append(w.rel, path)
}

// reserve makes room for n more results, which a wildcard or a slice
// knows before it adds them one by one: the result lists and the slab
// grow once instead of doubling their way up from nothing.
func (w *locWalk) reserve(n int) {
	if w.visit != nil || n <= 0 {
		return
	}
	w.vals = slices.Grow(w.vals, n)
	w.rel = slices.Grow(w.rel, n)
	w.slab = slices.Grow(w.slab, n*(len(w.stack)+1))
}

func (w *locWalk) descend(v any) {
	w.apply(v)
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			w.stack = append(w.stack, Seg{Index: i})
			w.descend(e)
			w.stack = w.stack[:len(w.stack)-1]
		}
	case map[string]any:
		if w.visit != nil {
			// a pre-pass builds a set: the order it visits members in
			// cannot show, so it spares the sort
			for k, e := range x {
				w.stack = append(w.stack, Seg{Name: k, Index: -1})
				w.descend(e)
				w.stack = w.stack[:len(w.stack)-1]
			}
			return
		}
		for _, k := range value.Keys(x) {
			w.stack = append(w.stack, Seg{Name: k, Index: -1})
			w.descend(x[k])
			w.stack = w.stack[:len(w.stack)-1]
		}
	case *value.Object:
		for i := range x.Len() {
			k, e := x.At(i)
			w.stack = append(w.stack, Seg{Name: k, Index: -1})
			w.descend(e)
			w.stack = w.stack[:len(w.stack)-1]
		}
	}
}

func (w *locWalk) apply(v any) {
	w.looked++
	arr, isArr := v.([]any)
	_, isObj := value.Len(v)
	var keys []string // the object's keys, once a selector walks them
	walkKeys := func() []string {
		if isObj && keys == nil {
			keys, _ = value.Ordered(v)
		}
		return keys
	}
	for _, sel := range w.sels {
		switch s := sel.(type) {
		case spec.Name:
			if e, ok := value.Member(v, string(s)); isObj && ok {
				w.add(e, Seg{Name: string(s), Index: -1})
			}
		case spec.Index:
			i := int(s)
			if i < 0 {
				i += len(arr)
			}
			if isArr && i >= 0 && i < len(arr) {
				w.add(arr[i], Seg{Index: i})
			}
		case spec.SliceSelector:
			if !isArr || s.Step() == 0 {
				continue
			}
			lower, upper := s.Bounds(len(arr))
			if s.Step() > 0 {
				w.reserve((upper - lower + s.Step() - 1) / s.Step())
				for i := lower; i < upper; i += s.Step() {
					w.add(arr[i], Seg{Index: i})
				}
			} else {
				w.reserve((upper - lower - s.Step() - 1) / -s.Step())
				for i := upper; lower < i; i += s.Step() {
					w.add(arr[i], Seg{Index: i})
				}
			}
		case spec.WildcardSelector:
			w.reserve(len(arr) + len(walkKeys()))
			for i, e := range arr {
				w.add(e, Seg{Index: i})
			}
			for _, k := range keys {
				e, _ := value.Member(v, k)
				w.add(e, Seg{Name: k, Index: -1})
			}
		case *existFilter:
			for i, e := range arr {
				if s.holds(e, w.root) {
					w.add(e, Seg{Index: i})
				}
			}
			for _, k := range walkKeys() {
				if e, _ := value.Member(v, k); s.holds(e, w.root) {
					w.add(e, Seg{Name: k, Index: -1})
				}
			}
		case *spec.FilterSelector:
			for i, e := range arr {
				if s.Eval(value.Plain(e), w.root) {
					w.add(e, Seg{Index: i})
				}
			}
			for _, k := range walkKeys() {
				if e, _ := value.Member(v, k); s.Eval(value.Plain(e), w.root) {
					w.add(e, Seg{Name: k, Index: -1})
				}
			}
		}
	}
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

// Walk calls visit with the location of every value p selects from root,
// filters seeing root as '$': a JSLT match pre-pass (JSLT-FORMAT §3.4).
// The location is valid during the call only. It returns how many values
// it looked at, for the caller to charge.
func (p *Path) Walk(root any, visit func([]Seg)) int {
	n := 0
	p.p.selectLocatedCounting(root, root, visit, &n)
	return n
}
