package value

import (
	"math"
	"strings"
)

// Stringify returns JSON.stringify(v) for a JSON value, members in
// JavaScript's own-key order (see Keys), the form the reference uses when
// it quotes a value inside an error message. Non-finite numbers render as
// null, as JSON.stringify renders them. A value that is not JSON data
// renders as null.
func Stringify(v any) string {
	var b strings.Builder
	stringify(&b, v)
	return b.String()
}

func stringify(b *strings.Builder, v any) {
	switch t := v.(type) {
	case bool:
		if t {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			b.WriteString("null")
			return
		}
		b.WriteString(NumberString(t))
	case int:
		b.WriteString(NumberString(float64(t)))
	case string:
		WriteString(b, t)
	case []any:
		b.WriteByte('[')
		for i, x := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			stringify(b, x)
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		for i, k := range Keys(t) {
			if i > 0 {
				b.WriteByte(',')
			}
			WriteString(b, k)
			b.WriteByte(':')
			stringify(b, t[k])
		}
		b.WriteByte('}')
	case *Object:
		b.WriteByte('{')
		for i, k := range t.names {
			if i > 0 {
				b.WriteByte(',')
			}
			WriteString(b, k)
			b.WriteByte(':')
			stringify(b, t.vals[i])
		}
		b.WriteByte('}')
	default:
		b.WriteString("null")
	}
}
