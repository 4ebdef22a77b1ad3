package query

import (
	"math"
	"strconv"

	"github.com/jetflow/jetflow/engine/fault"
)

// §8.15 vectors: a vector is an array of numbers. A value of another shape
// is JQ2001; two vectors that cannot be compared (different widths, empty,
// a non-finite component) answer the empty sequence.

// vectorArg requires an array whose items are all numbers.
func vectorArg(v any, path string) []any {
	arr, ok := v.([]any)
	if !ok {
		throw(fault.JQ2001, "expected a vector (an array of numbers), got "+describe(v), path)
	}
	for i, x := range arr {
		if _, ok := x.(float64); !ok {
			throw(fault.JQ2001, "expected a vector (an array of numbers), got "+describe(x)+" at index "+strconv.Itoa(i), path)
		}
	}
	return arr
}

// comparable is the reference's isVector: non-empty, of the given width,
// every component finite.
func comparable(v []any, width int) bool {
	if len(v) == 0 || width >= 0 && len(v) != width {
		return false
	}
	for _, x := range v {
		if f := x.(float64); math.IsInf(f, 0) || f != f {
			return false
		}
	}
	return true
}

// cosine is the reference's cosineSimilarity, summed in the same order;
// the products are rounded before each sum so none is fused. A vector of
// zeros (no direction) scores 0.
func cosine(a, b []any) float64 {
	var dot, na, nb float64
	for i := range a {
		x, y := a[i].(float64), b[i].(float64)
		dot += float64(x * y)
		na += float64(x * x)
		nb += float64(y * y)
	}
	den := float64(math.Sqrt(na) * math.Sqrt(nb))
	if !(den > 0) || math.IsInf(den, 0) || math.IsInf(dot, 0) || dot != dot {
		return 0
	}
	r := dot / den
	switch {
	case r > 1:
		return 1
	case r < -1:
		return -1
	}
	return r
}

func init() {
	operators["$similarity"] = nary(2, 2, func(a []arg, _ string) getter {
		return func(f *frame) any {
			x, y := a[0].get(f), a[1].get(f)
			if isEmpty(x) || isEmpty(y) {
				return empty
			}
			va, vb := vectorArg(x, a[0].path), vectorArg(y, a[1].path)
			if !comparable(va, -1) || !comparable(vb, len(va)) {
				return empty
			}
			return cosine(va, vb)
		}
	})
}
