package value

import (
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// AppendGoJSONString appends s as encoding/json's Marshal writes it (not
// as JSON.stringify does, WriteString): HTML characters escaped, invalid
// UTF-8 as U+FFFD, the line and paragraph separators escaped. Hand
// encoders that must write what Marshal wrote use it.
func AppendGoJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendGoJSONFloat appends f as encoding/json's Marshal writes a
// float64; ok is false for NaN and the infinities, which it refuses.
func AppendGoJSONFloat(b []byte, f float64) (_ []byte, ok bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json does
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// AppendGoJSON appends a decoded JSON value (nil, bool, float64, string,
// []any, map[string]any with its keys sorted) as encoding/json's Marshal
// writes it; ok is false for anything else and for NaN and the
// infinities, which the caller encodes with Marshal instead.
func AppendGoJSON(b []byte, v any) (_ []byte, ok bool) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, v), true
	case float64:
		return AppendGoJSONFloat(b, v)
	case string:
		return AppendGoJSONString(b, v), true
	case []any:
		return appendArray(b, v, AppendGoJSON)
	case map[string]any:
		return AppendGoJSONMap(b, v, AppendGoJSON)
	}
	return b, false
}

// appendArray appends a (null when nil), each element by elem.
func appendArray(b []byte, a []any, elem func([]byte, any) ([]byte, bool)) (_ []byte, ok bool) {
	if a == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	for i, e := range a {
		if i > 0 {
			b = append(b, ',')
		}
		if b, ok = elem(b, e); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

// AppendGoJSONMap appends a map with string keys as encoding/json's
// Marshal writes it (null when nil, keys sorted), each value by elem.
func AppendGoJSONMap[V any](b []byte, m map[string]V, elem func([]byte, V) ([]byte, bool)) (_ []byte, ok bool) {
	if m == nil {
		return append(b, "null"...), true
	}
	var buf [16]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendGoJSONString(b, k)
		b = append(b, ':')
		if b, ok = elem(b, m[k]); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}
