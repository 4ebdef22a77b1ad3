package jslt

import (
	"errors"
	"maps"
	"strconv"
	"strings"
	"sync"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
)

// run is one transformation: the input root, the parameters, the budget
// every body charges, and the match pre-pass.
//
// Runs are recycled (runPool): the slabs its entries and locations are
// cut from, and its hosts, serve the next transformation, cleared, so
// that a transformation of a small input allocates little besides what
// it answers. Nothing a transformation returns points into a run.
type run struct {
	s       *Stylesheet
	root    any
	rootLoc *loc
	ext     map[string]any
	b       *query.Budget
	// the pre-pass trie: an entry per selected location and per location
	// on the way to one, found from its parent by its step
	entries slab[entry]
	locs    slab[loc]
	hosts   []*host // one per dispatch depth, reused
	// built is set once a body returns an object built at run time
	// (*value.Object); the result is then made plain at the end
	built bool
	// marked is set once a body returns what holds the empty marker
	// (query.Hosted)
	marked bool
	top    loc // the root's location, rootLoc when locations are tracked
	// the pre-pass: the trie's root, the rule being walked, and markRule
	// as a func value, kept with the run so that it is made once
	trie    *entry
	marking *rule
	mark    func([]query.Seg)
}

// runPool recycles runs. A run whose slabs grew past keepChunks chunks
// is left to the collector rather than kept.
var runPool = sync.Pool{New: func() any { return new(run) }}

const keepChunks = 16

// slab hands out values of T by pointer from chunks that never move, and
// reuses its chunks, cleared, after reset.
type slab[T any] struct {
	chunks [][]T
	cur    int // the chunk being cut from
}

func (s *slab[T]) next() *T {
	if len(s.chunks) == 0 {
		s.chunks = append(s.chunks, make([]T, 0, 4))
	}
	c := s.chunks[s.cur]
	if len(c) == cap(c) {
		s.cur++
		if s.cur == len(s.chunks) {
			s.chunks = append(s.chunks, make([]T, 0, min(2*cap(c)+4, 256)))
		}
		c = s.chunks[s.cur]
	}
	c = c[:len(c)+1]
	s.chunks[s.cur] = c
	return &c[len(c)-1]
}

// reset clears what was handed out (each through clearOne, which
// zeroes it) and keeps the chunks for the next run; it reports false
// when the slab is too large to keep.
func (s *slab[T]) reset(clearOne func(*T)) bool {
	for i, c := range s.chunks {
		if i > s.cur {
			break
		}
		for j := range c {
			clearOne(&c[j])
		}
		s.chunks[i] = c[:0]
	}
	s.cur = 0
	return len(s.chunks) <= keepChunks
}

// clearEntry zeroes e but keeps its children's lists (emptied) for the
// entry that takes its place in the next run.
func clearEntry(e *entry) {
	clear(e.items)
	clear(e.names)
	*e = entry{items: e.items[:0], names: e.names[:0]}
}

func clearLoc(l *loc) { *l = loc{} }

// release returns r to the pool, cleared.
func (r *run) release() {
	keep := r.entries.reset(clearEntry)
	keep = r.locs.reset(clearLoc) && keep
	for _, h := range r.hosts {
		h.loc = nil
	}
	hosts, entries, locs, mark := r.hosts, r.entries, r.locs, r.mark
	*r = run{hosts: hosts, entries: entries, locs: locs, mark: mark}
	if keep {
		runPool.Put(r)
	}
}

// loc is a value's location: a list of steps from the root (whose loc has
// no parent), with its pre-pass entry (nil: no path rule selects it or
// anything below it).
type loc struct {
	parent *loc
	seg    query.Seg
	e      *entry
}

// entry is what the pre-pass knows of a location: which path rules
// select it, by rule index (a bit each), and which modes' rules select
// it or a location below it, by mode (a bit each).
type entry struct {
	rules bits // the path rules that select it
	way   bits // the modes whose rules select it or a location below it
	// the children: by array index (nil where none), and by member name,
	// a list while it is short (its first in place, so that the common
	// single child costs no allocation) and a map beside it once it is not
	items  []*entry
	first  namedEntry
	names  []namedEntry // the named children after first
	byName map[string]*entry
}

type namedEntry struct {
	name string
	e    *entry
}

// manyNames is the number of named children past which an entry finds
// them by hashing rather than by comparing.
const manyNames = 8

func (e *entry) kid(s query.Seg) *entry {
	if s.Index >= 0 {
		if s.Index < len(e.items) {
			return e.items[s.Index]
		}
		return nil
	}
	if e.byName != nil {
		return e.byName[s.Name]
	}
	if e.first.e != nil && e.first.name == s.Name {
		return e.first.e
	}
	for i := range e.names {
		if e.names[i].name == s.Name {
			return e.names[i].e
		}
	}
	return nil
}

func (e *entry) addKid(s query.Seg, c *entry) {
	if s.Index >= 0 {
		for len(e.items) <= s.Index {
			e.items = append(e.items, nil)
		}
		e.items[s.Index] = c
		return
	}
	if e.first.e == nil {
		e.first = namedEntry{s.Name, c}
		return
	}
	e.names = append(e.names, namedEntry{s.Name, c})
	if e.byName != nil {
		e.byName[s.Name] = c
	} else if len(e.names) >= manyNames {
		e.byName = make(map[string]*entry, 2*len(e.names)+2)
		e.byName[e.first.name] = e.first.e
		for _, n := range e.names {
			e.byName[n.name] = n.e
		}
	}
}

// eachNamed calls fn with every named child and its name.
func (e *entry) eachNamed(fn func(string, *entry)) {
	if e.first.e == nil {
		return
	}
	fn(e.first.name, e.first.e)
	for _, n := range e.names {
		fn(n.name, n.e)
	}
}

// bits is a set of small indexes, one word while they are below 64.
type bits struct {
	low  uint64   // indexes 0-63
	wide []uint64 // all of them, when there are more than 64
}

// add puts i (of n) in the set.
func (b *bits) add(i int, n int) {
	if n <= 64 {
		b.low |= 1 << i
		return
	}
	if b.wide == nil {
		b.wide = make([]uint64, (n+63)/64)
	}
	b.wide[i/64] |= 1 << (i % 64)
}

func (b *bits) has(i int) bool {
	if b.wide != nil {
		return b.wide[i/64]&(1<<(i%64)) != 0
	}
	return i < 64 && b.low&(1<<i) != 0
}

// kidOnWay is the child entry on the way to a location a rule of mode i
// selects, or nil.
func (e *entry) kidOnWay(s query.Seg, i int) *entry {
	if c := e.kid(s); c != nil && c.way.has(i) {
		return c
	}
	return nil
}

func (r *run) newEntry() *entry { return r.entries.next() }

func (r *run) child(e *entry, s query.Seg) *entry {
	if e == nil {
		return nil
	}
	return e.kid(s)
}

func (r *run) makeChild(e *entry, s query.Seg) *entry {
	c := e.kid(s)
	if c == nil {
		c = r.newEntry()
		e.addKid(s, c)
	}
	return c
}

// String returns the normalized path (RFC 9535 §2.7) of l.
func (l *loc) String() string {
	var b strings.Builder
	l.write(&b)
	return b.String()
}

func (l *loc) write(b *strings.Builder) {
	if l.parent == nil {
		b.WriteByte('$')
		return
	}
	l.parent.write(b)
	if l.seg.Index >= 0 {
		b.WriteByte('[')
		b.WriteString(strconv.Itoa(l.seg.Index))
		b.WriteByte(']')
		return
	}
	writeName(b, l.seg.Name)
}

// writeName writes a member step, escaped as the reference escapes it.
func writeName(b *strings.Builder, name string) {
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
}

func (r *run) childLoc(parent *loc, s query.Seg) *loc {
	if parent == nil {
		return nil
	}
	l := r.locs.next()
	*l = loc{parent: parent, seg: s, e: r.child(parent.e, s)}
	return l
}

// Transform applies the stylesheet to data (§5.1) and returns the result
// as the reference's transform does: ok false for the empty sequence, the
// item for one, a []any of the items for more. ext binds stylesheet
// parameters by name. Every rule body charges b (a fresh default Budget
// when nil), so one limit bounds the whole transformation.
func (s *Stylesheet) Transform(b *query.Budget, data any, ext map[string]any) (any, bool, error) {
	res, ok, _, err := s.transform(b, data, ext, false, false)
	return res, ok, err
}

// TransformOrdered is Transform whose result keeps the objects the
// bodies built as *value.Object, in the reference's member order, for a
// caller that hands the result on as the reference does (a DAG node's
// consumers): code that reads it as data must value.Plain it. holding
// says data may hold such objects (another node built them): the
// stylesheet walks them in their order, as the reference's does, and its
// path rules find their locations in them as in maps.
//
// The result keeps the reference's empty marker where a body left it in
// what it built (marked is then true), as the reference hands it on:
// code that stores the result or writes it as JSON must query.Unmark
// it. A marker data holds is handed on whether or not marked says so.
func (s *Stylesheet) TransformOrdered(b *query.Budget, data any, ext map[string]any, holding bool) (res any, ok, marked bool, err error) {
	return s.transform(b, data, ext, true, holding)
}

func (s *Stylesheet) transform(b *query.Budget, data any, ext map[string]any, ordered, holding bool) (any, bool, bool, error) {
	if len(s.root.rules) == 0 && s.root.unmatched == share {
		return data, true, false, nil // the empty stylesheet is the identity
	}
	if b == nil {
		b = &query.Budget{}
	}
	r := runPool.Get().(*run)
	defer r.release()
	r.s, r.root, r.ext, r.b = s, data, ext, b
	if s.needsLoc {
		e, err := r.prepass(holding)
		if err != nil {
			return nil, false, false, err
		}
		r.top = loc{e: e}
		r.rootLoc = &r.top
	}
	res, err := r.dispatch(data, r.rootLoc, s.root, 0, 0, holding)
	if err != nil {
		return nil, false, false, err
	}
	marked := r.marked
	if !ordered {
		if r.built || holding {
			// the result is a node's value: maps, as every value outside
			// the query evaluator
			res.one, res.many = value.Plain(res.one), value.PlainList(res.many)
		}
		if marked {
			// and JSON, as the reference's JSON text shows the marker
			res.one, res.many, marked = query.Unmark(res.one), query.UnmarkList(res.many), false
		}
	}
	switch res.n {
	case 0:
		return nil, false, false, nil
	case 1:
		return res.one, true, marked, nil
	}
	return res.many, true, marked, nil
}

// seq is a dispatch result: n items, the one in one when n is 1, all of
// them in many when n is 2 or more.
type seq struct {
	one  any
	many []any
	n    int
}

func single(v any) seq { return seq{one: v, n: 1} }

func (q seq) appendTo(out []any) []any {
	switch q.n {
	case 0:
		return out
	case 1:
		return append(out, q.one)
	}
	return append(out, q.many...)
}

// prepass evaluates every match path over the root once (§3.4) into a
// trie of the selected locations.
// Each value a path looks at costs a step of the budget, as each value
// the walk dispatches does: the walks are bounded with the bodies.
//
// holding says the root may hold objects built at run time: the trie is
// a set of locations, the same in a plain copy, which the match paths'
// filters read as they read any data.
func (r *run) prepass(holding bool) (*entry, *fault.Error) {
	root := r.newEntry()
	if r.mark == nil {
		r.mark = r.markRule // made once per pooled run
	}
	data := r.root
	if holding {
		data = value.Plain(data)
	}
	for _, rl := range r.s.rules {
		if !rl.hasPath {
			continue
		}
		r.trie, r.marking = root, rl
		looked := rl.path.Walk(data, r.mark)
		if err := r.b.Charge(looked, rl.pathDocPath); err != nil {
			return nil, err
		}
	}
	return root, nil
}

// markRule records that the rule being walked (marking) selects path,
// in the trie below r.trie.
func (r *run) markRule(path []query.Seg) {
	e := r.trie
	mode, modes := r.marking.mode.ord, len(r.s.modeList)
	e.way.add(mode, modes)
	for _, s := range path {
		e = r.makeChild(e, s)
		e.way.add(mode, modes)
	}
	e.rules.add(r.marking.index, len(r.s.rules))
}

// dispatch finds and fires the winning rule of m for v (§5.1), or the
// built-in rule. l is v's location, nil when it has none.
//
// depth counts the dispatches the value is nested in, applies how many of
// them came through $apply. holding says v may hold objects a body built
// (*value.Object, location-less): a body they reach and the built-in
// rule walk them in their order, as the reference's do.
func (r *run) dispatch(v any, l *loc, m *mode, depth, applies int, holding bool) (seq, *fault.Error) {
	if depth > MaxDepth {
		return seq{}, r.tooDeep(m, depth, applies)
	}
	if err := r.b.Charge(1, m.unmatchedPath); err != nil {
		return seq{}, err
	}
	var e *entry
	if l != nil {
		e = l.e
	}
	if m.pruned && (e == nil || !e.way.has(m.ord)) {
		// every rule needs a position: off the way to one its rules
		// select, nothing can fire here or below, and the value is its
		// own result (on the way, none fires here and the built-in
		// rule walks on)
		return single(v), nil
	}
	for _, rl := range m.rules {
		if rl.hasPath && (e == nil || !e.rules.has(rl.index)) {
			continue
		}
		return r.fire(rl, v, l, depth, applies, holding)
	}
	return r.builtIn(v, l, m, depth, applies, holding)
}

// tooDeep is JT2001 for a dispatch past MaxDepth. The reference reports
// it as its own guard words it only when its JavaScript stack lasts that
// long: a chain of dispatches mostly through $apply (whose frames are the
// larger) exhausts the stack first, and then it says so, at the root
// mode's disposition. Measured on its pinned build, a chain runs out of
// stack before depth 1025 when more than about 56% of its levels are
// $apply levels; jetflow draws the line there.
func (r *run) tooDeep(m *mode, depth, applies int) *fault.Error {
	if applies*100 > depth*56 {
		return fault.New(fault.JT2001,
			"dispatch recursion exhausted the host call stack before maxDepth "+strconv.Itoa(MaxDepth),
			r.s.root.unmatchedPath)
	}
	return fault.New(fault.JT2001, "dispatch depth "+strconv.Itoa(depth)+
		" exceeded maxDepth "+strconv.Itoa(MaxDepth), m.unmatchedPath)
}

// fire evaluates a rule's body with v as $; a query error becomes JT2004
// naming the rule and the location, an error of a nested dispatch passes
// through unwrapped.
func (r *run) fire(rl *rule, v any, l *loc, depth, applies int, holding bool) (seq, *fault.Error) {
	for len(r.hosts) <= depth {
		r.hosts = append(r.hosts, &host{r: r})
	}
	// a body at this depth finishes before the next one at it starts:
	// the bodies it nests run deeper
	h := r.hosts[depth]
	h.loc, h.depth, h.applies = l, depth, applies
	one, many, n, built, marked, err := rl.body.Hosted(r.b, h, v, holding)
	r.built = r.built || built
	r.marked = r.marked || marked
	if err == nil {
		return seq{one, many, n}, nil
	}
	inner, ok := errors.AsType[*fault.Error](err)
	if !ok {
		inner = fault.NoPath(fault.JQ2001, err.Error())
	}
	if inner.Code[:2] == "JT" {
		return seq{}, inner
	}
	where := "a location-less value"
	if l != nil {
		where = "location " + l.String()
	}
	return seq{}, fault.Wrap(fault.JT2004, "rule "+rl.docPath+" failed at "+where+": "+inner.Error(),
		rl.bodyDocPath+inner.Path, inner)
}

func describe(l *loc) string {
	if l != nil {
		return l.String()
	}
	return "a location-less value"
}

// builtIn is the mode's disposition for a value no rule matched (§5.1):
// an error, the scalar itself, or the container rebuilt from the dispatch
// of every child. A pruned mode dispatches only the children on the way
// to a selected location; the others are their own results.
func (r *run) builtIn(v any, l *loc, m *mode, depth, applies int, holding bool) (seq, *fault.Error) {
	if m.unmatched == errorDisposition {
		return seq{}, fault.New(fault.JT2003,
			"no rule in mode "+value.Stringify(m.name)+" matched "+describe(l), m.unmatchedPath)
	}
	var e *entry
	if m.pruned && l != nil {
		e = l.e
	}
	switch x := v.(type) {
	case map[string]any:
		var out map[string]any
		var keys []string
		if e != nil {
			// only the members on the way to a selected location
			out = maps.Clone(x)
			var buf [8]string
			keys = buf[:0]
			e.eachNamed(func(name string, c *entry) {
				if !c.way.has(m.ord) {
					return
				}
				if _, ok := x[name]; ok {
					keys = append(keys, name)
				}
			})
			value.SortKeys(keys)
		} else {
			out = make(map[string]any, len(x))
			keys = value.Keys(x)
		}
		for _, k := range keys {
			res, err := r.dispatchChild(x[k], r.childLoc(l, query.Seg{Name: k, Index: -1}), m, depth+1, applies, holding)
			if err != nil {
				return seq{}, err
			}
			switch res.n {
			case 0:
				delete(out, k)
			case 1:
				out[k] = res.one
			default:
				return seq{}, fault.New(fault.JT2002, "member '"+k+"' at "+
					describe(r.childLoc(l, query.Seg{Name: k, Index: -1}))+
					" produced "+strconv.Itoa(res.n)+" items", m.unmatchedPath)
			}
		}
		return single(out), nil
	case []any:
		out := make([]any, 0, len(x))
		for i, c := range x {
			if e != nil && e.kidOnWay(query.Seg{Index: i}, m.ord) == nil {
				out = append(out, c)
				continue
			}
			res, err := r.dispatchChild(c, r.childLoc(l, query.Seg{Index: i}), m, depth+1, applies, holding)
			if err != nil {
				return seq{}, err
			}
			out = res.appendTo(out)
		}
		return single(out), nil
	case *value.Object:
		// built at run time: by a body (location-less), or by another
		// node and handed in as the input (located): rebuilt in its
		// order, a pruned mode dispatching only the members on the way
		// to a selected location
		out := value.NewObject(x.Len())
		for i := range x.Len() {
			k, c := x.At(i)
			seg := query.Seg{Name: k, Index: -1}
			if e != nil && e.kidOnWay(seg, m.ord) == nil {
				out.Set(k, c)
				continue
			}
			cl := r.childLoc(l, seg)
			res, err := r.dispatchChild(c, cl, m, depth+1, applies, holding)
			if err != nil {
				return seq{}, err
			}
			switch res.n {
			case 0:
			case 1:
				out.Set(k, res.one)
			default:
				return seq{}, fault.New(fault.JT2002, "member '"+k+"' at "+describe(cl)+
					" produced "+strconv.Itoa(res.n)+" items", m.unmatchedPath)
			}
		}
		r.built = true
		return single(out), nil
	}
	return single(v), nil
}

// dispatchChild dispatches a child the built-in rule rebuilds, or an item
// $apply hands on, and reads a dispatch to the empty marker (a value a
// query left in the input, handed on by the built-in rule) as the empty
// sequence: the reference compares each with its empty sequence, the
// same symbol, and leaves it out of the member, the array or the
// sequence (its concatenation skips it). The root's dispatch keeps it.
func (r *run) dispatchChild(v any, l *loc, m *mode, depth, applies int, holding bool) (seq, *fault.Error) {
	res, err := r.dispatch(v, l, m, depth, applies, holding)
	if res.n == 1 {
		if _, ok := res.one.(value.Empty); ok {
			return seq{}, err
		}
	}
	return res, err
}

// host is one body evaluation as its $apply and its externals see it.
type host struct {
	r              *run
	loc            *loc
	depth, applies int
}

func (h *host) External(name string) (any, bool) {
	switch name {
	case "root":
		return h.r.root, true
	case "path":
		if h.loc != nil {
			return h.loc.String(), true
		}
		return nil, true
	}
	v, ok := h.r.ext[name]
	return v, ok
}

func (h *host) Located() bool { return h.loc != nil }

func (h *host) Tracking() bool { return h.r.s.needsLoc }

// Built reports whether a body has returned an object built at run time.
func (h *host) Built() bool { return h.r.built }

func (h *host) Apply(items []any, rel [][]query.Seg, fromRoot bool, name string, holding bool) ([]any, *fault.Error) {
	m := h.r.s.modes[name]
	base := h.loc
	if fromRoot {
		base = h.r.rootLoc
	}
	// most rules answer one item for each: the list is sized for that
	out := make([]any, 0, len(items))
	for i, item := range items {
		var l *loc
		if rel != nil {
			l = base
			for _, s := range rel[i] {
				l = h.r.childLoc(l, s)
			}
		}
		res, err := h.r.dispatchChild(item, l, m, h.depth+1, h.applies+1, holding)
		if err != nil {
			return nil, err
		}
		out = res.appendTo(out)
	}
	return out, nil
}
