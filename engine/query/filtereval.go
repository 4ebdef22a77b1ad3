package query

import (
	"regexp"
	"unicode/utf8"

	"github.com/theory/jsonpath/spec"

	"github.com/jetflow/jetflow/engine/value"
)

// The evaluation of a JSONPath filter ([?…]), as the reference compiles
// one (segments.js of @jarenjs/json): the walk of pathsyntax.go builds
// the expression, so a filter means what the reference's parser reads,
// not what the library's evaluator makes of it. Comparisons are RFC 9535
// §2.3.5.2.2 in the reference's reading: == is deep equality with
// Nothing equal only to Nothing; < orders two numbers or two strings (by
// code point) and nothing else; a <= b is a < b || a == b. match() and
// search() are the engine's I-Regexp; a pattern that is not a string or
// not a valid I-Regexp tests false.

// pathFilter is a filter selector whose test is ours; the library's
// selector is embedded for spec.Selector, whose methods are partly
// unexported.
type pathFilter struct {
	*spec.FilterSelector
	expr filterExpr
}

// holds reports whether the filter selects cur, root being '$'.
func (x *pathFilter) holds(cur, root any) bool { return x.expr.test(cur, root) }

// filterExpr is a logical expression of a filter.
type filterExpr interface {
	test(cur, root any) bool
}

// operand is a comparable: a literal, a singular query or a function of
// ValueType. ok false is Nothing.
type operand interface {
	eval(cur, root any) (v any, ok bool)
}

// filterQuery is a query inside a filter, from '@' (relative) or '$'.
type filterQuery struct {
	relative bool
	path     *jsonPath
}

// singular reports whether the query is names and indexes only (RFC 9535
// §2.3.5.1): the path's steps record it.
func (q *filterQuery) singular() bool { return q.path.steps != nil }

func (q *filterQuery) from(cur, root any) any {
	if q.relative {
		return cur
	}
	return root
}

// one returns the node of a singular query, ok false when there is none.
func (q *filterQuery) one(cur, root any) (any, bool) { return q.path.walk(q.from(cur, root)) }

// nodes returns the nodes the query selects.
func (q *filterQuery) nodes(cur, root any) []any {
	return q.path.selectInto(nil, q.from(cur, root), root)
}

type orExpr []filterExpr

func (x orExpr) test(cur, root any) bool {
	for _, e := range x {
		if e.test(cur, root) {
			return true
		}
	}
	return false
}

type andExpr []filterExpr

func (x andExpr) test(cur, root any) bool {
	for _, e := range x {
		if !e.test(cur, root) {
			return false
		}
	}
	return true
}

type notExpr struct{ x filterExpr }

func (x notExpr) test(cur, root any) bool { return !x.x.test(cur, root) }

// existExpr tests whether a query selects a node; a singular one walks
// its names and indexes without a list.
type existExpr struct{ q *filterQuery }

func (x existExpr) test(cur, root any) bool {
	if x.q.singular() {
		_, ok := x.q.one(cur, root)
		return ok
	}
	return len(x.q.nodes(cur, root)) > 0
}

// cmpOp is a comparison operator, read once when the filter is built
// rather than matched as text for every candidate.
type cmpOp uint8

const (
	opNone cmpOp = iota
	opEq         // ==
	opNe         // !=
	opLt         // <
	opGt         // >
	opLe         // <=
	opGe         // >=
)

// cmpExpr is a comparison.
type cmpExpr struct {
	op          cmpOp
	left, right operand
}

func (x *cmpExpr) test(cur, root any) bool {
	a, aok := x.left.eval(cur, root)
	b, bok := x.right.eval(cur, root)
	switch x.op {
	case opEq:
		return cmpEqual(a, aok, b, bok)
	case opNe:
		return !cmpEqual(a, aok, b, bok)
	case opLt:
		return cmpLess(a, aok, b, bok)
	case opGt:
		return cmpLess(b, bok, a, aok)
	case opLe:
		return cmpLess(a, aok, b, bok) || cmpEqual(a, aok, b, bok)
	default: // opGe
		return cmpLess(b, bok, a, aok) || cmpEqual(a, aok, b, bok)
	}
}

// cmpEqual is deep equality, Nothing equal to Nothing only.
func cmpEqual(a any, aok bool, b any, bok bool) bool {
	if !aok || !bok {
		return aok == bok
	}
	return value.Equal(a, b)
}

// cmpLess is itemLess when both sides are something: Nothing orders
// with nothing.
func cmpLess(a any, aok bool, b any, bok bool) bool {
	return aok && bok && itemLess(a, b, false)
}

type literalOp struct{ v any }

func (x literalOp) eval(_, _ any) (any, bool) { return x.v, true }

// queryOp is a singular query as a comparable.
type queryOp struct{ q *filterQuery }

func (x queryOp) eval(cur, root any) (any, bool) { return x.q.one(cur, root) }

// lengthOp is length(): a string's code points, an array's elements, an
// object's members; Nothing for anything else.
type lengthOp struct{ arg operand }

func (x lengthOp) eval(cur, root any) (any, bool) {
	v, ok := x.arg.eval(cur, root)
	if !ok {
		return nil, false
	}
	switch s := v.(type) {
	case string:
		return float64(utf8.RuneCountInString(s)), true
	case []any:
		return float64(len(s)), true
	}
	if n, isObj := value.Len(v); isObj {
		return float64(n), true
	}
	return nil, false
}

// countOp is count(): how many nodes its query selects.
type countOp struct{ q *filterQuery }

func (x countOp) eval(cur, root any) (any, bool) {
	if x.q.singular() {
		if _, ok := x.q.one(cur, root); ok {
			return 1.0, true
		}
		return 0.0, true
	}
	return float64(len(x.q.nodes(cur, root))), true
}

// valueOp is value(): the one node its query selects, else Nothing.
type valueOp struct{ q *filterQuery }

func (x valueOp) eval(cur, root any) (any, bool) {
	if x.q.singular() {
		return x.q.one(cur, root)
	}
	if n := x.q.nodes(cur, root); len(n) == 1 {
		return n[0], true
	}
	return nil, false
}

// pathRegex is match() (full) or search(). A literal pattern is compiled
// once (re nil when it is not a valid I-Regexp or not a string); another
// through a cache per call.
type pathRegex struct {
	input   operand
	pattern operand // nil for a literal pattern
	re      *regexp.Regexp
	cache   *regexCache
}

func (x *pathRegex) test(cur, root any) bool {
	v, ok := x.input.eval(cur, root)
	s, isStr := v.(string)
	if !ok || !isStr {
		return false
	}
	re := x.re
	if x.pattern != nil {
		p, ok := x.pattern.eval(cur, root)
		ps, isStr := p.(string)
		if !ok || !isStr {
			return false
		}
		re = x.cache.get(ps)
	}
	return re != nil && re.MatchString(s)
}
