package query

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/jetflow/jetflow/engine/value"
)

// Marks is how a value that EvalMarked left holding the empty marker is
// stored as JSON and read back (Remark): v with each marker it holds (v
// itself, an array element or an object member, at any depth) replaced
// by null in place, and the JSON Pointers of the markers, in the order
// a walk in member order meets them. Unlike Unmark, a member holding
// the marker stays, so its place in a built object's order is kept. A
// value holding none is returned as it is, with no pointer.
func Marks(v any) (nulled any, at []string) {
	nulled, _ = marksUnder(v, "", &at)
	return nulled, at
}

// marksUnder is Marks of v at ptr; changed is false when v holds no
// marker (y is then v).
func marksUnder(v any, ptr string, at *[]string) (y any, changed bool) {
	switch x := v.(type) {
	case emptySeq:
		*at = append(*at, ptr)
		return nil, true
	case []any:
		var out []any
		for i, e := range x {
			y, ch := marksUnder(e, ptr+"/"+strconv.Itoa(i), at)
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
			y, ch := marksUnder(x[k], ptr+"/"+value.EncodePointerSegment(k), at)
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
			y, ch := marksUnder(e, ptr+"/"+value.EncodePointerSegment(k), at)
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

// Remark puts the empty marker back at each JSON Pointer of at in v, as
// Marks found them, and returns v. It modifies v in place: v must be the
// caller's own, such as a value just decoded from what Marks stored.
func Remark(v any, at []string) (any, error) {
	for _, ptr := range at {
		if ptr == "" {
			return empty, nil
		}
		if ptr[0] != '/' {
			return nil, fmt.Errorf("marker pointer %q does not start with '/'", ptr)
		}
		if err := remarkAt(v, ptr); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// remarkAt sets the member or element ptr names to the marker.
func remarkAt(v any, ptr string) error {
	segs := strings.Split(ptr[1:], "/")
	cur := v
	for i, raw := range segs {
		seg, last := value.DecodePointerSegment(raw), i == len(segs)-1
		switch x := cur.(type) {
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(x) {
				return fmt.Errorf("marker pointer %q: no element %q", ptr, seg)
			}
			if last {
				x[n] = empty
			}
			cur = x[n]
		case map[string]any:
			e, ok := x[seg]
			if !ok {
				return fmt.Errorf("marker pointer %q: no member %q", ptr, seg)
			}
			if last {
				x[seg] = empty
			}
			cur = e
		case *value.Object:
			e, ok := x.Get(seg)
			if !ok {
				return fmt.Errorf("marker pointer %q: no member %q", ptr, seg)
			}
			if last {
				x.Set(seg, empty)
			}
			cur = e
		default:
			return fmt.Errorf("marker pointer %q: %q is not in an array or object", ptr, seg)
		}
	}
	return nil
}
