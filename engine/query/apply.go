package query

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"

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
	// fromRoot; rel is nil for location-less items. items and rel are
	// valid during the call only. holding says the items may hold
	// objects a body built (*value.Object), which the bodies they reach
	// must be told (Hosted). Its error is returned unchanged from the
	// body's evaluation.
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
//
// The result keeps the reference's empty marker where the body left it
// (one.go), as the reference's transformation hands it on: an item, an
// element or a member that holds it (marked is then true), which
// another body reads as the empty sequence, the built-in rule leaves
// out where it is a child's whole result, and a checkpoint refuses.
func (q *Query) Hosted(b *Budget, h Host, data any, holding bool) (one any, many []any, n int, built, marked bool, err error) {
	f := q.newFrame(data, b, h, h.External)
	if holding {
		f.built, f.holding = true, true
	}
	v, err := q.hostedRun(f, b)
	built, marked = f.built, f.marked
	*f = frame{}
	framePool.Put(f)
	if err != nil {
		return nil, nil, 0, false, false, err
	}
	switch x := v.(type) {
	case emptySeq:
		return nil, nil, 0, false, false, nil
	case *multi:
		if err := q.checkResult(x.len()); err != nil {
			return nil, nil, 0, false, false, err
		}
		return nil, x.items(), x.len(), built, marked, nil
	}
	return v, nil, 1, built, marked, nil
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
			// the lists are the host's only while it dispatches: they
			// are lent, and taken back once it has answered
			lent := lentPool.Get().(*lentLists)
			var n int
			vals, rel := located.selectLocatedCounting(base, f.slots[0], &n, lent)
			f.charge(len(vals), selPath)
			v := applied(f, h, vals, rel, fromRoot, mode)
			lent.release(vals, rel)
			return v
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
	// one built in its order, and read the marker it left in them (or
	// an item that is the marker, then their $) as the reference's do
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

// lentLists are the lists a located walk answers in, lent to a host for
// one $apply and recycled after it: the values, their locations, the
// slab the locations are cut from, and the steps they begin with.
type lentLists struct {
	vals   []any
	rel    [][]Seg
	slab   []Seg
	prefix []Seg // the steps of the names and indexes the path begins with
}

var lentPool = sync.Pool{New: func() any { return new(lentLists) }}

// maxLent is the length past which lists are left to the collector
// rather than kept for the next $apply.
const maxLent = 4096

// release takes back the lists the walk answered (vals and rel, which
// may have grown away from l's own), cleared, and returns l to the pool.
func (l *lentLists) release(vals []any, rel [][]Seg) {
	if cap(vals) > maxLent || cap(rel) > maxLent || cap(l.slab) > 4*maxLent {
		return
	}
	clear(vals)
	clear(rel)
	clear(l.slab)
	clear(l.prefix)
	if cap(vals) >= cap(l.vals) {
		l.vals = vals[:0]
	}
	if cap(rel) >= cap(l.rel) {
		l.rel = rel[:0]
	}
	l.slab, l.prefix = l.slab[:0], l.prefix[:0]
	lentPool.Put(l)
}

// selectLocated is selectInto keeping each result's location relative
// to cur.
func (p *jsonPath) selectLocated(cur, root any) ([]any, [][]Seg) {
	var n int
	return p.selectLocatedCounting(cur, root, &n, nil)
}

// selectLocatedCounting is selectLocated adding to *looked the values
// whose selectors it applied. With lent, the last segment answers in
// lent's lists (its slab grown in place), which the caller gives back.
func (p *jsonPath) selectLocatedCounting(cur, root any, looked *int, lent *lentLists) ([]any, [][]Seg) {
	// the names and indexes the path begins with select one value or
	// none: they are walked without lists, their steps kept in prefix
	lead := p.lead
	if p.steps != nil {
		lead = p.steps
	}
	var prefix []Seg
	if lent != nil {
		prefix = lent.prefix[:0]
	}
	for _, s := range lead {
		*looked++
		v, seg, ok := stepLocated(cur, s)
		if !ok {
			return nil, nil
		}
		cur, prefix = v, append(prefix, seg)
	}
	first := len(lead)
	if lent != nil {
		lent.prefix = prefix
	}
	prefix = prefix[:len(prefix):len(prefix)]
	if first == len(p.segs) {
		if lent != nil {
			return append(lent.vals[:0], cur), append(lent.rel[:0], prefix)
		}
		return []any{cur}, [][]Seg{prefix}
	}
	var vals []any
	var rel [][]Seg
	for n := first; n < len(p.segs); n++ {
		w := locWalk{root: root, sels: p.sels[n]}
		if lent != nil && n == len(p.segs)-1 {
			w.vals, w.rel, w.slab = lent.vals[:0], lent.rel[:0], lent.slab[:0]
		}
		descendant := p.segs[n].IsDescendant()
		switch {
		case n == first && descendant:
			w.stack = append(make([]Seg, 0, len(prefix)+8), prefix...)
			w.descend(cur)
		case n == first:
			w.stack = prefix
			w.apply(cur)
		default:
			for i, v := range vals {
				if descendant {
					w.stack = append(make([]Seg, 0, len(rel[i])+8), rel[i]...)
					w.descend(v)
				} else {
					w.stack = rel[i]
					w.apply(v)
				}
			}
		}
		vals, rel = w.vals, w.rel
		if lent != nil && n == len(p.segs)-1 {
			lent.slab = w.slab
		}
		*looked += w.looked
		if len(vals) == 0 {
			break
		}
	}
	return vals, rel
}

// stepLocated is one leading name or index of a located walk: the value
// it selects from v, and its step (a negative index counted from the
// end), as locWalk.apply selects it.
func stepLocated(v any, s singular) (any, Seg, bool) {
	if !s.isIdx {
		e, ok := value.Member(v, s.name)
		return e, Seg{Name: s.name, Index: -1}, ok
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, Seg{}, false
	}
	i := s.index
	if i < 0 {
		i += len(arr)
	}
	if i < 0 || i >= len(arr) {
		return nil, Seg{}, false
	}
	return arr[i], Seg{Index: i}, true
}

// locWalk applies one segment's selectors, pushing the location of the
// value at hand on stack and copying it only for what is selected.
type locWalk struct {
	root   any
	sels   []spec.Selector
	stack  []Seg
	vals   []any
	rel    [][]Seg
	slab   []Seg // backs the paths in rel, capped so none grows into another
	looked int   // values the selectors were applied to
	// depthFirst: the walk is one segment of a walkVisit, which builds a
	// set of locations, so it lists nothing, takes each value it selects
	// through the next segment's walk (then) at once, or hands its
	// location to visit when it is the last, and visits an object's
	// members in any order (their sort would not show)
	depthFirst bool
	then       *locWalk
	deep       bool // then's segment is a descendant segment
	visit      func([]Seg)
}

func (w *locWalk) add(v any, s Seg) {
	if w.depthFirst {
		// the location is the stack and the step, valid while the walks
		// after this one run
		path := append(w.stack, s)
		if w.then == nil {
			w.visit(path)
			return
		}
		w.then.stack = path
		if w.deep {
			w.then.descend(v)
		} else {
			w.then.apply(v)
		}
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
	if w.depthFirst || n <= 0 {
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
		if w.depthFirst {
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
		case *pathFilter:
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
		}
	}
}

// Path is a parsed RFC 9535 query.
type Path struct{ p *jsonPath }

// ParsePath parses an RFC 9535 query. The error's text is the
// reference's: "Invalid JSONPath: <what> at position <n> in '<src>'".
func ParsePath(src string) (*Path, error) {
	p, detail := parseRFC(src)
	if p == nil {
		return nil, errors.New(detail)
	}
	return &Path{p}, nil
}

// Walk calls visit with the location of every value p selects from root,
// filters seeing root as '$': a JSLT match pre-pass (JSLT-FORMAT §3.4).
// The location is valid during the call only. It returns how many values
// it looked at, for the caller to charge.
func (p *Path) Walk(root any, visit func([]Seg)) int {
	return p.p.walkVisit(root, visit)
}

// visitScratch is what walkVisit walks with.
type visitScratch struct {
	walks [8]locWalk
	stack [16]Seg
}

var visitPool = sync.Pool{New: func() any { return new(visitScratch) }}

// release clears the walks walkVisit used (n) and the stack, and
// returns sp to the pool.
func (sp *visitScratch) release(n int) {
	clear(sp.walks[:min(n, len(sp.walks))])
	clear(sp.stack[:])
	visitPool.Put(sp)
}

// walkVisit calls visit with each location selectLocated would list,
// depth first: each value a segment selects is taken through the
// segments after it at once, instead of each segment's results being
// listed before the next one runs. It visits the same locations, in
// another order (the caller builds a set of them), and returns how many
// values it applied selectors to, which is what the breadth-first walk
// applies them to; it lists nothing.
func (p *jsonPath) walkVisit(root any, visit func([]Seg)) int {
	if len(p.segs) == 0 {
		visit(nil)
		return 0
	}
	// the walks point at each other and the stack is handed to visit, so
	// they live on the heap: recycled for paths of up to eight segments
	sp := visitPool.Get().(*visitScratch)
	defer sp.release(len(p.segs))
	walks := sp.walks[:0]
	if len(p.segs) > len(sp.walks) {
		walks = make([]locWalk, 0, len(p.segs))
	}
	for n := range p.segs {
		walks = append(walks, locWalk{root: root, sels: p.sels[n], depthFirst: true})
	}
	for n := range len(walks) - 1 {
		walks[n].then, walks[n].deep = &walks[n+1], p.segs[n+1].IsDescendant()
	}
	last := &walks[len(walks)-1]
	last.visit = visit
	first := &walks[0]
	first.stack = sp.stack[:0]
	if p.segs[0].IsDescendant() {
		first.descend(root)
	} else {
		first.apply(root)
	}
	looked := 0
	for i := range walks {
		looked += walks[i].looked
	}
	return looked
}
