package replay

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

// Diverge returns the JSON Pointer of the first place where the JSON
// documents a and b differ (object keys visited in sorted order, arrays
// by index) and the compact JSON at that place on each side ("" where a
// side has nothing). A document that does not parse diverges at its root.
// Equal values give an empty pointer and values.
func Diverge(a, b []byte) (pointer, av, bv string) {
	va, erra := decode(a)
	vb, errb := decode(b)
	if erra != nil || errb != nil {
		return "", excerpt(a), excerpt(b)
	}
	p, x, y, differ := walk("", va, vb, true, true)
	if !differ {
		return "", "", ""
	}
	return p, x, y
}

func decode(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

func walk(at string, a, b any, hasA, hasB bool) (string, string, string, bool) {
	if !hasA || !hasB {
		return at, show(a, hasA), show(b, hasB), true
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(x)+len(y))
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, dup := x[k]; !dup {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			vx, okx := x[k]
			vy, oky := y[k]
			if p, s, t, d := walk(at+"/"+escape(k), vx, vy, okx, oky); d {
				return p, s, t, true
			}
		}
		return "", "", "", false
	case []any:
		y, ok := b.([]any)
		if !ok {
			break
		}
		for i := 0; i < max(len(x), len(y)); i++ {
			var vx, vy any
			if i < len(x) {
				vx = x[i]
			}
			if i < len(y) {
				vy = y[i]
			}
			if p, s, t, d := walk(at+"/"+strconv.Itoa(i), vx, vy, i < len(x), i < len(y)); d {
				return p, s, t, true
			}
		}
		return "", "", "", false
	default:
		if show(a, true) == show(b, true) {
			return "", "", "", false
		}
	}
	return at, show(a, true), show(b, true), true
}

// escape makes an object key a JSON Pointer token (RFC 6901).
func escape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func show(v any, ok bool) string {
	if !ok {
		return ""
	}
	data, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return excerpt(data)
}

// excerpt bounds a value shown to a person.
func excerpt(data []byte) string {
	const limit = 200
	s := strings.ToValidUTF8(string(data), "?")
	if len(s) > limit {
		return strings.ToValidUTF8(s[:limit], "") + "…"
	}
	return s
}
