package query

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/jetflow/jetflow/engine/value"
)

// Pointers are the JSON Pointers of what a value holds that JSON cannot:
// the empty marker (At), NaN and the two infinities.
type Pointers struct {
	At     []string `json:"at,omitempty"`
	NaN    []string `json:"nan,omitempty"`
	Inf    []string `json:"inf,omitempty"`
	NegInf []string `json:"-inf,omitempty"`
}

// Empty tells whether p names nothing.
func (p Pointers) Empty() bool {
	return len(p.At)+len(p.NaN)+len(p.Inf)+len(p.NegInf) == 0
}

// Marks is how a value that JSON cannot hold as it is (one EvalMarked
// left holding the empty marker, or holding NaN or an infinity) is
// stored as JSON and read back (Remark): v with each such item (v
// itself, an array element or an object member, at any depth) replaced
// by null in place, and the JSON Pointers of those nulls, in the order a
// walk in member order meets them. Unlike Unmark, a member holding the
// marker stays, so its place in a built object's order is kept. A value
// holding none is returned as it is, with no pointer.
func Marks(v any) (nulled any, p Pointers) {
	nulled, _ = marksUnder(v, "", &p)
	return nulled, p
}

// marksUnder is Marks of v at ptr; changed is false when v holds nothing
// JSON cannot (y is then v).
func marksUnder(v any, ptr string, p *Pointers) (y any, changed bool) {
	switch x := v.(type) {
	case emptySeq:
		p.At = append(p.At, ptr)
		return nil, true
	case float64:
		switch {
		case math.IsNaN(x):
			p.NaN = append(p.NaN, ptr)
		case math.IsInf(x, 1):
			p.Inf = append(p.Inf, ptr)
		case math.IsInf(x, -1):
			p.NegInf = append(p.NegInf, ptr)
		default:
			return v, false
		}
		return nil, true
	case []any:
		var out []any
		for i, e := range x {
			y, ch := marksUnder(e, ptr+"/"+strconv.Itoa(i), p)
			if ch && out == nil {
				out = slices.Clone(x)
			}
			if ch {
				out[i] = y
			}
		}
		return orSame(out, v)
	case map[string]any:
		var out map[string]any
		for _, k := range value.Keys(x) {
			y, ch := marksUnder(x[k], ptr+"/"+value.EncodePointerSegment(k), p)
			if ch && out == nil {
				out = maps.Clone(x)
			}
			if ch {
				out[k] = y
			}
		}
		return orSame(out, v)
	case *value.Object:
		var out *value.Object
		for i := range x.Len() {
			k, e := x.At(i)
			y, ch := marksUnder(e, ptr+"/"+value.EncodePointerSegment(k), p)
			if ch && out == nil {
				out = value.NewObject(x.Len())
				for j := range x.Len() {
					out.Set(x.At(j))
				}
			}
			if ch {
				out.Set(k, y)
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	return v, false
}

// orSame is out when a copy was made, else v unchanged.
func orSame[T ~[]any | ~map[string]any](out T, v any) (any, bool) {
	if out == nil {
		return v, false
	}
	return out, true
}

// Remark puts back what Marks found at each pointer of p in v and
// returns v. It modifies v in place: v must be the caller's own, such as
// a value just decoded from what Marks stored.
func Remark(v any, p Pointers) (any, error) {
	for _, set := range []struct {
		at []string
		x  any
	}{{p.At, empty}, {p.NaN, math.NaN()}, {p.Inf, math.Inf(1)}, {p.NegInf, math.Inf(-1)}} {
		for _, ptr := range set.at {
			if ptr == "" {
				v = set.x
				continue
			}
			if ptr[0] != '/' {
				return nil, fmt.Errorf("pointer %q does not start with '/'", ptr)
			}
			if err := remarkAt(v, ptr, set.x); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}

// remarkAt sets the member or element ptr names to x.
func remarkAt(v any, ptr string, set any) error {
	segs := strings.Split(ptr[1:], "/")
	cur := v
	for i, raw := range segs {
		seg, last := value.DecodePointerSegment(raw), i == len(segs)-1
		switch x := cur.(type) {
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(x) {
				return fmt.Errorf("pointer %q: no element %q", ptr, seg)
			}
			if last {
				x[n] = set
			}
			cur = x[n]
		case map[string]any:
			e, ok := x[seg]
			if !ok {
				return fmt.Errorf("pointer %q: no member %q", ptr, seg)
			}
			if last {
				x[seg] = set
			}
			cur = e
		case *value.Object:
			e, ok := x.Get(seg)
			if !ok {
				return fmt.Errorf("pointer %q: no member %q", ptr, seg)
			}
			if last {
				x.Set(seg, set)
			}
			cur = e
		default:
			return fmt.Errorf("pointer %q: %q is not in an array or object", ptr, seg)
		}
	}
	return nil
}
