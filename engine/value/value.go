// Package value holds the engine's JSON data model and the operations the
// reference performs on it: RFC 8785 canonical text, the content hash,
// deep copy and equality, JavaScript's own-key order, and bounded decoding.
//
// A value is what encoding/json produces into an interface: nil, bool,
// float64, string, []any or map[string]any. Numbers are float64 because
// the reference's are. Inside the query evaluator (and in a task's with
// on its way to the handler's text) an object built at run time may also
// be an *Object, which keeps its member order; Plain makes it a map.
package value

import (
	"cmp"
	"math"
	"slices"
	"unicode/utf8"
)

// Clone returns a deep copy of v.
func Clone(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = Clone(x)
		}
		return m
	case *Object:
		o := NewObject(t.Len())
		o.names, o.vals, o.ints = append(o.names, t.names...), o.vals[:t.Len()], t.ints
		for i, x := range t.vals {
			o.vals[i] = Clone(x)
		}
		o.reindex(0)
		return o
	case []any:
		a := make([]any, len(t))
		for i, x := range t {
			a[i] = Clone(x)
		}
		return a
	case int:
		return float64(t)
	case int64:
		return float64(t)
	}
	return v
}

// Empty is the empty sequence held where a value stands: the reference's
// internal empty marker, a JavaScript symbol, which its query evaluator
// can leave in an array element or an object member (see engine/query,
// one.go). Two are equal and one equals nothing else; JSON writes it as
// null in an array and leaves out a member holding it. It never leaves
// the query evaluator.
type Empty struct{}

// Equal reports deep equality of two JSON values (numbers by value).
func Equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		if o, ok := b.(*Object); ok {
			return Equal(o, x) // the *Object case below
		}
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !Equal(v, w) {
				return false
			}
		}
		return true
	case *Object:
		n, ok := Len(b)
		if !ok || n != x.Len() {
			return false
		}
		for i, k := range x.names {
			w, ok := Member(b, k)
			if !ok || !Equal(x.vals[i], w) {
				return false
			}
		}
		return true
	case Empty:
		_, ok := b.(Empty)
		return ok
	}
	return false
}

// Keys returns an object's keys in JavaScript's own-property order for an
// object built from canonical JSON: array-index keys ascending by number,
// then the rest in canonical (UTF-16) order. The reference walks members
// in this order, so the first error it reports depends on it. It does
// not allocate per comparison: lowering sorts every states object.
func Keys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	SortKeys(keys)
	return keys
}

// SortKeys sorts keys in JavaScript's own-property order (see Keys).
func SortKeys(keys []string) {
	slices.SortFunc(keys, compareJSKeys)
}

// InKeysOrder reports whether keys are in the order SortKeys puts them.
func InKeysOrder(keys []string) bool {
	return slices.IsSortedFunc(keys, compareJSKeys)
}

func compareJSKeys(a, b string) int {
	ia, aIdx := arrayIndex(a)
	ib, bIdx := arrayIndex(b)
	switch {
	case aIdx && bIdx:
		return cmp.Compare(ia, ib)
	case aIdx:
		return -1
	case bIdx:
		return 1
	}
	return CompareUTF16(a, b)
}

// arrayIndex reports whether k is a canonical array index (0 … 2^32-2),
// which JavaScript orders before every other key.
func arrayIndex(k string) (uint64, bool) {
	if k == "" || len(k) > 10 || (len(k) > 1 && k[0] == '0') {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, n <= math.MaxUint32-1
}

// CompareUTF16 compares two strings by UTF-16 code units, the order of
// JavaScript's string comparison and of RFC 8785 member sorting.
func CompareUTF16(a, b string) int {
	// Code point order equals UTF-16 order except when a supplementary
	// character meets one in U+E000…U+FFFF: compare lead units first.
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ua, ub := utf16Lead(ra), utf16Lead(rb)
			if ua == ub {
				ua, ub = ra, rb
			}
			return cmp.Compare(ua, ub)
		}
		a, b = a[na:], b[nb:]
	}
	return cmp.Compare(len(a), len(b))
}

func utf16Lead(r rune) rune {
	if r >= 0x10000 {
		return 0xD800 + ((r - 0x10000) >> 10)
	}
	return r
}

// IsObject reports whether v is a JSON object.
func IsObject(v any) bool { _, ok := Len(v); return ok }

// TypeName returns JavaScript's typeof for a JSON value ("object" for null,
// arrays and objects).
func TypeName(v any) string {
	switch v.(type) {
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	}
	return "object"
}
