package query

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// A sequence value is one of: the empty sequence (emptySeq{}), a single
// item (the JSON value itself, "singleton = item"), or *multi holding two
// or more items. A *multi never nests and never holds fewer than two items.
// The empty sequence is value.Empty, so that the reference's empty marker
// (one.go), the empty sequence held as an array element or an object
// member, compares with value.Equal as the reference's symbol does.
type emptySeq = value.Empty

var empty any = emptySeq{}

type multi struct {
	xs []any // the items, once built
	// answers of a series operator not yet built as records: they are
	// counted without building them, and built once when an item is read
	rows  []bucketRow
	joins []asofJoin
	// order, when not nil, has the joins built as *value.Objects in
	// the reference's order (an evaluation that walks what it builds)
	order *asofOrder
}

// items returns the items, building deferred records on the first read
// (shared, do not mutate).
func (m *multi) items() []any {
	if m.xs == nil {
		m.xs = m.build()
	}
	return m.xs
}

// len is the number of items, without building them.
func (m *multi) len() int {
	if m.xs != nil {
		return len(m.xs)
	}
	return len(m.rows) + len(m.joins)
}

func (m *multi) build() []any {
	if m.rows != nil {
		xs := make([]any, len(m.rows))
		for i := range m.rows {
			xs[i] = m.rows[i].record()
		}
		m.rows = nil
		return xs
	}
	xs := make([]any, len(m.joins))
	for i := range m.joins {
		if m.order != nil {
			xs[i] = m.joins[i].ordered(i, m.order)
		} else {
			xs[i] = m.joins[i].record()
		}
	}
	m.joins, m.order = nil, nil
	return xs
}

func isEmpty(v any) bool { _, ok := v.(emptySeq); return ok }

// seqOf adopts items as a sequence value.
func seqOf(items []any) any {
	switch len(items) {
	case 0:
		return empty
	case 1:
		return items[0]
	}
	return &multi{xs: items}
}

// appendSeq flattens a sequence value onto acc.
func appendSeq(acc []any, v any) []any {
	switch x := v.(type) {
	case emptySeq:
		return acc
	case *multi:
		return append(acc, x.items()...)
	}
	return append(acc, v)
}

// itemsOf returns the items of a sequence value (shared, do not mutate).
func itemsOf(v any) []any {
	switch x := v.(type) {
	case emptySeq:
		return nil
	case *multi:
		return x.items()
	}
	return []any{v}
}

func seqLen(v any) int {
	switch x := v.(type) {
	case emptySeq:
		return 0
	case *multi:
		return x.len()
	}
	return 1
}

func firstItem(v any) any {
	if m, ok := v.(*multi); ok {
		return m.items()[0]
	}
	return v
}

// runtimeError unwinds evaluation to the query boundary, which turns it
// back into a returned error (the encoding/json decodeState pattern); it
// keeps the closure tree free of error plumbing on the hot path.
type runtimeError struct{ err *fault.Error }

func throw(code fault.Code, reason, path string) {
	panic(runtimeError{fault.New(code, reason, path)})
}

// ebv is the effective boolean value (QUERY-FORMAT §2.2).
func ebv(v any, path string) bool {
	switch x := v.(type) {
	case emptySeq, nil:
		return false
	case bool:
		return x
	case float64:
		return x == x && x != 0
	case string:
		return x != ""
	case *multi:
		throw(fault.JQ2003, "the effective boolean value of a sequence of two or more items is undefined", path)
	}
	return true
}

// describe names a sequence value for error messages, as the reference does.
func describe(v any) string {
	switch x := v.(type) {
	case *multi:
		return "a sequence of " + strconv.Itoa(x.len()) + " items"
	case emptySeq:
		return "the empty sequence"
	case nil:
		return "null"
	case []any:
		return "an array"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	}
	return "an object"
}

// compareCodePoints orders strings by Unicode scalar values; Go's byte
// order on UTF-8 is exactly that.
func compareCodePoints(a, b string) int { return strings.Compare(a, b) }

// itemLess is RFC 9535 ordering: only two numbers or two strings order.
func itemLess(a, b any, orEqual bool) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		if !ok {
			return false
		}
		if orEqual {
			return x <= y
		}
		return x < y
	case string:
		y, ok := b.(string)
		if !ok {
			return false
		}
		c := compareCodePoints(x, y)
		if orEqual {
			return c <= 0
		}
		return c < 0
	}
	return false
}

// compareNumberKeys orders numbers with NaN equal to itself and below
// every other number (the $orderby / $sort rule).
func compareNumberKeys(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a != a:
		if b != b {
			return 0
		}
		return -1
	case b != b:
		return 1
	}
	return 0
}

// stableKey serializes an item so that deep-equal items (NaN with NaN,
// -0 with 0) map to one string: the grouping relation of $groupby and
// $distinct.
func stableKey(b *strings.Builder, v any) {
	switch x := v.(type) {
	case string:
		value.WriteString(b, x)
	case float64:
		if x == 0 {
			b.WriteByte('0')
		} else {
			b.WriteString(value.NumberString(x))
		}
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case nil:
		b.WriteString("null")
	case emptySeq:
		b.WriteByte('~') // the marker, distinct from null
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			stableKey(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			value.WriteString(b, k)
			b.WriteByte(':')
			stableKey(b, x[k])
		}
		b.WriteByte('}')
	case *value.Object:
		stableKey(b, x.Map())
	default:
		b.WriteString("?")
	}
}

func stableKeyString(v any) string {
	var b strings.Builder
	stableKey(&b, v)
	return b.String()
}

// jsRound is JavaScript's Math.round: half toward +Infinity.
func jsRound(x float64) float64 {
	if x != x || math.IsInf(x, 0) {
		return x
	}
	r := math.Floor(x)
	if x-r >= 0.5 {
		r++
	}
	if r == 0 && math.Signbit(x) {
		return math.Copysign(0, -1)
	}
	return r
}
