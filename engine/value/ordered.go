package value

import (
	"strconv"
)

// DecodeOrdered is Decode that keeps the member order the text writes
// its objects in, as JavaScript's JSON.parse does: an object whose order
// (array-index keys first ascending, then the others as written) is not
// Keys order is a *Object, every other object a map. It reads a task's
// result as the reference's handler would hand it over, and reads back
// what AppendGoJSONOrdered wrote. Text whose objects are all in Keys
// order (what a map's encoders write, when its keys are ASCII) costs no
// more than Decode.
func DecodeOrdered(data []byte, lim Limits) (any, error) {
	v, err := Decode(data, lim)
	if err != nil || keysInOrder(data) {
		return v, err
	}
	_, w, err := DecodeWritten(data, lim)
	if err != nil {
		return nil, err
	}
	if len(w) == 0 {
		return v, nil
	}
	return applyWritten(v, "", w), nil
}

// applyWritten rebuilds the objects of v that w lists as Objects in the
// written order; v is valid decoded JSON.
func applyWritten(v any, path string, w Written) any {
	switch t := v.(type) {
	case []any:
		for i, x := range t {
			t[i] = applyWritten(x, path+"/"+strconv.Itoa(i), w)
		}
	case map[string]any:
		for k, x := range t {
			t[k] = applyWritten(x, path+"/"+EncodePointerSegment(k), w)
		}
		if keys, ok := w[path]; ok {
			o := NewObject(len(keys))
			for _, k := range keys {
				o.Set(k, t[k])
			}
			return o
		}
	}
	return v
}

// keysInOrder reports, without allocating, whether every object of the
// valid JSON text data surely has its keys in Keys order: each key
// plain ASCII with no escape, and each after the one before it. A key
// it cannot judge that way answers false, and the caller reads the
// order properly.
func keysInOrder(data []byte) bool {
	// prev[d] is the last key of the object open at depth d (start,
	// end), or -1 before its first key
	var stack [32]struct{ start, end int }
	d := -1
	inObj := [32]bool{}
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '{', '[':
			d++
			if d >= len(stack) {
				return false
			}
			inObj[d] = c == '{'
			stack[d].start, stack[d].end = -1, -1
		case '}', ']':
			d--
		case '"':
			// a string: a key when it follows '{' or ',' inside an object
			j := i + 1
			ascii := true
			for ; j < len(data) && data[j] != '"'; j++ {
				if data[j] == '\\' || data[j] >= 0x80 {
					ascii = false
					if data[j] == '\\' {
						j++
					}
				}
			}
			if d >= 0 && inObj[d] && isKeyPosition(data, i) {
				if !ascii {
					return false
				}
				k := data[i+1 : j]
				if p := stack[d]; p.start >= 0 && compareASCIIKeys(data[p.start:p.end], k) >= 0 {
					return false
				}
				stack[d].start, stack[d].end = i+1, j
			}
			i = j
		}
	}
	return true
}

// isKeyPosition reports whether the string starting at data[i] follows
// '{' or ',' (past whitespace), which inside an object makes it a key.
func isKeyPosition(data []byte, i int) bool {
	for j := i - 1; j >= 0; j-- {
		switch data[j] {
		case ' ', '\t', '\n', '\r':
			continue
		case '{', ',':
			return true
		}
		return false
	}
	return false
}

// compareASCIIKeys is compareJSKeys for keys of plain ASCII.
func compareASCIIKeys(a, b []byte) int {
	ai, bi := asciiIndex(a), asciiIndex(b)
	switch {
	case ai && bi:
		if len(a) != len(b) {
			if len(a) < len(b) {
				return -1
			}
			return 1
		}
	case ai:
		return -1
	case bi:
		return 1
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

// asciiIndex reports whether k is a canonical array index: digits, no
// leading zero, at most 2^32-2.
func asciiIndex(k []byte) bool {
	if len(k) == 0 || len(k) > 10 || (k[0] == '0' && len(k) > 1) {
		return false
	}
	var n uint64
	for _, c := range k {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + uint64(c-'0')
	}
	return n <= 1<<32-2
}

// AppendGoJSONOrdered is AppendGoJSON that also writes a *Object: in its
// own order when that is not Keys order, else as a map of its members is
// written (keys sorted), so that DecodeOrdered reads back the same value
// and AppendGoJSONOrdered then writes the same bytes.
func AppendGoJSONOrdered(b []byte, v any) (_ []byte, ok bool) {
	switch t := v.(type) {
	case *Object:
		if InKeysOrder(t.names) {
			return AppendGoJSONMap(b, t.Map(), AppendGoJSONOrdered)
		}
		b = append(b, '{')
		for i, k := range t.names {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(AppendGoJSONString(b, k), ':')
			if b, ok = AppendGoJSONOrdered(b, t.vals[i]); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	case []any:
		if t == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = AppendGoJSONOrdered(b, e); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		return AppendGoJSONMap(b, t, AppendGoJSONOrdered)
	}
	return AppendGoJSON(b, v)
}
