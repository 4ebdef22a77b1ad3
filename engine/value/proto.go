package value

import (
	"maps"
	"slices"
)

// WithoutProto returns v without its members named "__proto__", at every
// level, as the reference reads what it deep-copies at compile time (a
// JSLT stylesheet, a $const literal, an operator's verbatim spec): it
// copies member by member into new JavaScript objects, where assigning
// "__proto__" sets the copy's prototype rather than a member, so nothing
// after sees one. v itself is not changed; a part with no such member is
// shared, not copied, and changed is false.
func WithoutProto(v any) (_ any, changed bool) {
	switch x := v.(type) {
	case map[string]any:
		var out map[string]any
		for k, c := range x {
			d, ch := WithoutProto(c)
			if k != "__proto__" && !ch {
				continue
			}
			if out == nil {
				out = maps.Clone(x)
			}
			if k == "__proto__" {
				delete(out, k)
			} else {
				out[k] = d
			}
		}
		if out != nil {
			return out, true
		}
	case []any:
		var out []any
		for i, c := range x {
			if d, ch := WithoutProto(c); ch {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = d
			}
		}
		if out != nil {
			return out, true
		}
	}
	return v, false
}
