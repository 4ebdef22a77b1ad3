package query

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// getter evaluates one compiled expression against a frame and returns a
// sequence value (see seq.go).
type getter func(f *frame) any

// frame is the per-evaluation state: slot 0 is the input document, every
// binding site and external owns one slot (QUERY-FORMAT Appendix C.5).
type frame struct {
	slots []any
	// what the evaluation may still spend; below zero it fails
	stepsLeft, bytesLeft int
	lim                  *Limits
	budget               *Budget // nil: the query's own limits
	host                 Host    // a JSLT rule body's transformation, else nil
	buf                  [5]any  // slots of small queries, saving an allocation
	// built is set once the evaluation makes a *value.Object; until then
	// no value it holds can contain one (its inputs never do)
	built bool
	// marked is set once the evaluation holds the empty marker in an
	// array or object it built (one.go): the result is then unmarked
	marked bool
	// keep makes $map and $from-entries build *value.Objects: set when
	// the query can walk what it built or its result keeps their order
	// (EvalOrdered, a JSLT body); otherwise their order cannot show and
	// they build maps
	keep bool
	// holding: the input may hold *value.Objects (Evaluator.Holding)
	holding bool
	// short arrays cut from chunks (see list)
	lists int
	chunk []any
}

// unbound marks an external the caller did not bind.
type unboundT struct{}

// scope is the lexical environment: a chain of name → slot bindings.
type scope struct {
	name   string
	slot   int
	parent *scope
}

// compiler holds the state of one compilation.
type compiler struct {
	written value.Written
	// observes is set once the query can walk an object it built in
	// member order ($entries, a wildcard over a variable)
	observes  bool
	nextSlot  int
	extSlots  map[string]int
	extNames  []string
	lim       Limits
	maxDepth  int
	deepPath  string
	hardDepth int
	// late holds the literal checks the reference makes only after it
	// has read the whole document, in the order it makes them, so that
	// a document with two faults names the same one
	late []func()
	// apply, when set, makes $apply an operator (JSLT rule bodies)
	apply *ApplyOperator
	// one is set by each expression as it is compiled: whether the
	// reference deems it statically one item (see one.go); oneSlots
	// holds the variables bound to one item
	one      bool
	oneSlots map[int]bool
	// lastPath is the path the last string expression compiled to, if
	// it was one: $exists and $empty ask it whether it selects a node
	lastPath pathRef
}

// pathRef is a compiled path and the variable it reads.
type pathRef struct {
	p        *jsonPath
	slot     int
	external bool
	name     string
}

var (
	varNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	varHeadRE = regexp.MustCompile(`^\$([A-Za-z_][A-Za-z0-9_]*)`)
)

// compileError unwinds compilation; Compile recovers it into a returned
// error, so the recursive descent needs no error plumbing.
type compileError struct{ err *fault.Error }

func fail(code fault.Code, reason, path string) {
	panic(compileError{fault.New(code, reason, path)})
}

func ptr(base, seg string) string { return base + "/" + value.EncodePointerSegment(seg) }

func idx(base string, i int) string { return base + "/" + strconv.Itoa(i) }

// expr compiles any JSON value in expression position (QUERY-FORMAT §3).
func (c *compiler) expr(v any, path string, sc *scope, depth int) getter {
	if depth > c.maxDepth {
		c.maxDepth = depth
		c.deepPath = path
	}
	if depth > c.hardDepth {
		fail(fault.JQ0011, "the query nests more than "+strconv.Itoa(c.hardDepth)+
			" expressions deep, more than limits.depth ("+strconv.Itoa(c.lim.Depth)+")", path)
	}
	g := c.exprKind(v, path, sc, depth)
	return c.counted(g, path)
}

// counted charges one step per node evaluation (limits.steps).
func (c *compiler) counted(g getter, path string) getter {
	return func(f *frame) any {
		f.stepsLeft--
		if f.stepsLeft < 0 {
			f.overSteps(path)
		}
		return g(f)
	}
}

func (c *compiler) exprKind(v any, path string, sc *scope, depth int) getter {
	switch x := v.(type) {
	case string:
		return c.str(x, path, sc)
	case nil, bool, float64:
		c.one = true
		return literal(x)
	case []any:
		g := c.array(x, path, sc, depth)
		c.one = true
		if c.writtenBelow(path) {
			return g
		}
		return folded(x, g)
	case map[string]any:
		if c.writtenBelow(path) {
			return c.object(x, path, sc, depth)
		}
		return folded(x, c.object(x, path, sc, depth))
	}
	fail(fault.JQ0003, "a query document cannot contain a "+describeGo(v), path)
	return nil
}

func describeGo(v any) string {
	switch v.(type) {
	case int, int64, int32, float32, uint, uint64:
		return "non-float64 number"
	}
	return "non-JSON value"
}

func literal(v any) getter { return func(*frame) any { return v } }

// str compiles a string expression (Rule 2).
func (c *compiler) str(s, path string, sc *scope) getter {
	c.one = true
	if s == "" || s[0] != '$' {
		return literal(s)
	}
	if len(s) == 1 {
		return func(f *frame) any { return f.slots[0] }
	}
	switch s[1] {
	case '$':
		return literal(s[1:])
	case '.', '[':
		c.one = false
		p := parsePath(s, s, path)
		c.lastPath = pathRef{p, 0, false, "$"}
		return p.getter(0, false, "$", path)
	}
	m := varHeadRE.FindStringSubmatch(s)
	if m == nil {
		fail(fault.JQ0004, "'"+s+"' is not a valid path or escape", path)
	}
	name := m[1]
	slot, external := c.resolve(name, sc)
	rest := s[len(m[0]):]
	if rest == "" {
		c.one = external || c.oneSlots[slot]
		return varGetter(slot, external, name, path)
	}
	c.one = false
	p := parsePath("$"+rest, s, path)
	if p.steps == nil {
		// a wildcard, descendant or filter over a variable walks what it
		// holds, which may be an object the query built
		c.observes = true
	}
	c.lastPath = pathRef{p, slot, external, name}
	return p.getter(slot, external, name, path)
}

// resolve finds a variable in scope; a free name is an external,
// allocated a slot on first appearance (use is the declaration, §9).
func (c *compiler) resolve(name string, sc *scope) (int, bool) {
	for s := sc; s != nil; s = s.parent {
		if s.name == name {
			return s.slot, false
		}
	}
	slot, ok := c.extSlots[name]
	if !ok {
		slot = c.nextSlot
		c.nextSlot++
		c.extSlots[name] = slot
		c.extNames = append(c.extNames, name)
	}
	return slot, true
}

// segment compiles part and takes the late checks it queued off the
// queue, for a phrase whose parts the reference compiles in another
// order than they are read in.
func (c *compiler) segment(part func()) []func() {
	start := len(c.late)
	part()
	seg := append([]func(){}, c.late[start:]...)
	c.late = c.late[:start]
	return seg
}

func (c *compiler) bindSlot() int {
	s := c.nextSlot
	c.nextSlot++
	return s
}

func varGetter(slot int, external bool, name, path string) getter {
	if !external {
		return func(f *frame) any { return f.slots[slot] }
	}
	return func(f *frame) any {
		v := f.slots[slot]
		if _, ok := v.(unboundT); ok {
			throw(fault.JQ2006, "external parameter '"+name+"' was not bound", path)
		}
		return v
	}
}

// array compiles an array constructor (Rule 3): element sequences
// concatenate into the members of one new array.
func (c *compiler) array(elems []any, path string, sc *scope, depth int) getter {
	gets := make([]getter, len(elems))
	for i, e := range elems {
		gets[i] = c.expr(e, idx(path, i), sc, depth+1)
		if c.one && mayBeEmpty(e) {
			gets[i] = oneElement(gets[i])
		}
	}
	if len(gets) > smallArray {
		return func(f *frame) any {
			acc := make([]any, 0, len(gets))
			for _, g := range gets {
				acc = appendSeq(acc, g(f))
			}
			f.charge(len(acc), path)
			return acc
		}
	}
	return func(f *frame) any {
		// the elements first, so that the array is made at its size (an
		// element may be a sequence of many items)
		var buf [smallArray]any
		n := 0
		for i, g := range gets {
			buf[i] = g(f)
			n += seqLen(buf[i])
		}
		acc := f.list(n)
		for _, v := range buf[:len(gets)] {
			acc = appendSeq(acc, v)
		}
		f.charge(len(acc), path)
		return acc
	}
}

// smallArray is the number of elements up to which an array constructor
// holds its elements' values before it makes the array.
const smallArray = 4

// list returns an empty list with room for n items, for an array the
// evaluation builds. The first few are made each on its own; after them,
// an evaluation that keeps building short arrays (a $return of one per
// tuple) cuts them from chunks of listChunk items, each capped at its
// length, so that appending to one never reaches the next. A chunk lives
// as long as any array cut from it.
func (f *frame) list(n int) []any {
	if n > smallList || f.lists < ownLists {
		f.lists++
		return make([]any, 0, n)
	}
	if cap(f.chunk)-len(f.chunk) < n {
		f.chunk = make([]any, 0, listChunk)
	}
	k := len(f.chunk)
	f.chunk = f.chunk[:k+n]
	return f.chunk[k : k : k+n]
}

const (
	ownLists  = 4  // lists an evaluation makes before it cuts them from chunks
	smallList = 8  // the longest list cut from a chunk
	listChunk = 64 // items per chunk
)

type member struct {
	name string
	get  getter
	path string
	// one: the reference deems the member's expression one item, so that
	// an empty answer is the marker, held as the member's value (one.go)
	one bool
}

// value evaluates the member; ok is false when it is empty, which leaves
// the member out, unless it is the marker.
func (m member) value(f *frame) (any, bool) {
	return oneMemberValue(f, m.get(f), m.one, m.name, m.path)
}

// oneMemberValue is memberValue where a member deemed one item (one)
// that evaluates empty holds the marker as its value (one.go).
func oneMemberValue(f *frame, v any, one bool, name, path string) (any, bool) {
	if one && isEmpty(v) {
		f.marked = true
		return v, true
	}
	return memberValue(v, name, path)
}

// memberValue checks the value v of member name of a constructor: ok is
// false when it is empty, which leaves the member out, and more than one
// item is refused.
func memberValue(v any, name, path string) (any, bool) {
	switch x := v.(type) {
	case emptySeq:
		return nil, false
	case *multi:
		manyItems(x, name, path)
	}
	return v, true
}

// manyItems refuses a member of more than one item; out of memberValue,
// so that it inlines.
func manyItems(x *multi, name, path string) {
	throw(fault.JQ2001, "member '"+name+"' evaluated to "+strconv.Itoa(x.len())+
		" items; an object member takes exactly one", path)
}

// object compiles Rule 1: a map constructor, or a phrase.
func (c *compiler) object(obj map[string]any, path string, sc *scope, depth int) getter {
	keys, asWritten := c.keysOf(obj, path)
	dollar := 0
	for _, k := range keys {
		if strings.HasPrefix(k, "$") {
			dollar++
		}
	}
	if dollar == 0 {
		members := make([]member, len(keys))
		for i, k := range keys {
			p := ptr(path, k)
			members[i] = member{k, c.expr(obj[k], p, sc, depth+1), p, false}
			members[i].one = c.one && mayBeEmpty(obj[k])
		}
		c.one = true
		if asWritten {
			return orderedConstructor(members, path)
		}
		return func(f *frame) any {
			out := make(map[string]any, len(members))
			for _, m := range members {
				if v, ok := m.value(f); ok {
					out[m.name] = v
				}
			}
			f.chargeObject(len(out), path)
			return out
		}
	}
	if dollar != len(keys) {
		fail(fault.JQ0001, "an object cannot mix $-prefixed and plain keys", path)
	}
	return c.phrase(obj, keys, path, sc, depth)
}

// keysOf returns obj's keys in the order the document writes them when
// it was read as written (asWritten true, an order other than Keys
// order), else in Keys order.
func (c *compiler) keysOf(obj map[string]any, path string) (keys []string, asWritten bool) {
	return c.written.KeysOf(obj, path)
}

// writtenBelow reports whether an object at or below path is written in
// an order other than Keys order: such a constructor is built at each
// evaluation, in that order, rather than folded into a map.
func (c *compiler) writtenBelow(path string) bool {
	for p := range c.written {
		if p == path || strings.HasPrefix(p, path+"/") {
			return true
		}
	}
	return false
}

// orderedConstructor builds the members into a *value.Object, in the
// order written.
func orderedConstructor(members []member, path string) getter {
	return func(f *frame) any {
		out := value.NewObject(len(members))
		f.built = true
		for _, m := range members {
			if v, ok := m.value(f); ok {
				out.Set(m.name, v)
			}
		}
		f.chargeObject(out.Len(), path)
		return out
	}
}

var flworKeys = map[string]bool{
	"$fold": true, "$for": true, "$let": true, "$as": true, "$where": true,
	"$groupby": true, "$orderby": true, "$count": true, "$return": true,
}

var quantKeys = map[string]bool{"$some": true, "$every": true, "$satisfies": true}

func has(obj map[string]any, k string) bool { _, ok := obj[k]; return ok }

func (c *compiler) phrase(obj map[string]any, keys []string, path string, sc *scope, depth int) getter {
	allFlwor := true
	for _, k := range keys {
		if !flworKeys[k] {
			allFlwor = false
			break
		}
	}
	if allFlwor && len(keys) >= 2 && has(obj, "$return") && (has(obj, "$for") || has(obj, "$let") || has(obj, "$fold")) {
		return c.flwor(obj, path, sc, depth)
	}
	if len(keys) == 2 && has(obj, "$satisfies") && (has(obj, "$some") || has(obj, "$every")) {
		return c.quantifier(obj, path, sc, depth)
	}
	if len(keys) == 1 {
		return c.operator(keys[0], obj[keys[0]], path, sc, depth)
	}
	for _, k := range keys {
		if !isVocabulary(k) && (k != "$apply" || c.apply == nil) {
			failUnknown(k, path)
		}
	}
	fail(fault.JQ0003, "invalid phrase key combination ("+strings.Join(keys, ", ")+")", path)
	return nil
}

func isVocabulary(k string) bool {
	if flworKeys[k] || quantKeys[k] || k == "$const" || k == "$map" {
		return true
	}
	_, ok := operators[k]
	return ok || otherKnown[k]
}

// pair is one [key, value] entry of a $map.
type pair struct {
	key, val         getter
	keyPath, valPath string
	one              bool // the value is deemed one item (member.one)
}

// mapPairs builds a $map as a map, for an evaluation where its member
// order cannot show.
func mapPairs(f *frame, pairs []pair, opPath string) any {
	out := make(map[string]any, len(pairs))
	for _, p := range pairs {
		if k, v, ok := p.member(f); ok {
			out[k] = v
		}
	}
	f.chargeObject(len(out), opPath)
	return out
}

// member evaluates the pair's key and value; ok is false when the value
// is empty, which leaves the member out.
func (p pair) member(f *frame) (string, any, bool) {
	kv := p.key(f)
	k, ok := kv.(string)
	if !ok {
		throw(fault.JQ2004, "a $map key must evaluate to a single string, got "+describe(kv), p.keyPath)
	}
	v, ok := oneMemberValue(f, p.val(f), p.one, k, p.valPath)
	return k, v, ok
}

// mapConstructor compiles {"$map": [[key, value], ...]} (§3.5.2).
func (c *compiler) mapConstructor(arg any, opPath string, sc *scope, depth int) getter {
	list := requireArray("$map", arg, 0, -1, opPath)
	pairs := make([]pair, len(list))
	for i, e := range list {
		ep := idx(opPath, i)
		kv, ok := e.([]any)
		if !ok || len(kv) != 2 {
			fail(fault.JQ0003, "a $map entry must be an array of exactly two expressions", ep)
		}
		pairs[i] = pair{c.expr(kv[0], ep+"/0", sc, depth+1), c.expr(kv[1], ep+"/1", sc, depth+1), ep + "/0", ep + "/1", false}
		pairs[i].one = c.one && mayBeEmpty(kv[1])
	}
	return func(f *frame) any {
		if !f.keep {
			return mapPairs(f, pairs, opPath)
		}
		out := value.NewObject(len(pairs))
		f.built = true
		for _, p := range pairs {
			if k, v, ok := p.member(f); ok {
				out.Set(k, v)
			}
		}
		f.chargeObject(out.Len(), opPath)
		return out
	}
}

// requireArray checks an operator's array argument and arity (max -1 is
// unbounded).
func requireArray(op string, arg any, min, max int, opPath string) []any {
	list, ok := arg.([]any)
	if !ok {
		fail(fault.JQ0003, "'"+op+"' takes an array of expressions", opPath)
	}
	if len(list) < min || (max >= 0 && len(list) > max) {
		var arity string
		switch {
		case min == max:
			arity = "exactly " + strconv.Itoa(min)
		case max < 0:
			arity = "at least " + strconv.Itoa(min)
		default:
			arity = strconv.Itoa(min) + " to " + strconv.Itoa(max)
		}
		fail(fault.JQ0003, "'"+op+"' takes "+arity+" operand(s), got "+strconv.Itoa(len(list)), opPath)
	}
	return list
}
