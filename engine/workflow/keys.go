package workflow

import (
	"slices"
	"unicode/utf8"
)

// jsKeys returns an object's keys in JavaScript's own-key order, as
// value.Keys does, without allocating per comparison: lowering sorts every
// states object, which dominates the cost of small documents.
func jsKeys(m map[string]any) []string {
	type key struct {
		s     string
		index uint64
		isIdx bool
	}
	keys := make([]key, 0, len(m))
	for k := range m {
		n, ok := arrayIndex(k)
		keys = append(keys, key{k, n, ok})
	}
	slices.SortFunc(keys, func(a, b key) int {
		switch {
		case a.isIdx && b.isIdx:
			if a.index < b.index {
				return -1
			}
			return 1
		case a.isIdx:
			return -1
		case b.isIdx:
			return 1
		}
		return compareUTF16(a.s, b.s)
	})
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.s
	}
	return out
}

// arrayIndex reports whether k is a canonical array index, 0 … 2^32-2.
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
	return n, n <= 1<<32-2
}

// compareUTF16 orders strings by UTF-16 code units, like
// value.CompareUTF16.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ua, ub := utf16Lead(ra), utf16Lead(rb)
			if ua == ub {
				ua, ub = ra, rb
			}
			if ua < ub {
				return -1
			}
			return 1
		}
		a, b = a[na:], b[nb:]
	}
	switch {
	case a != "":
		return 1
	case b != "":
		return -1
	}
	return 0
}

func utf16Lead(r rune) rune {
	if r >= 0x10000 {
		return 0xD800 + ((r - 0x10000) >> 10)
	}
	return r
}
