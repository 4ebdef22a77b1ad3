package value

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
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
	if keysInOrder(data) || !json.Valid(data) {
		return Decode(data, lim)
	}
	if err := checkLimits(data, lim); err != nil {
		return nil, err
	}
	p := orderedParser{data: data}
	v := p.value()
	if p.failed {
		// what the parser does not judge itself (a number out of
		// range): Decode's answer
		return Decode(data, lim)
	}
	return v, nil
}

// orderedParser reads valid JSON text, building each object whose
// JavaScript order is not Keys order as a *Object and every other as a
// map. Strings and numbers are read as encoding/json reads them.
type orderedParser struct {
	data   []byte
	i      int
	failed bool
	keys   []string // scratch for fromMap
}

func (p *orderedParser) ws() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *orderedParser) value() any {
	p.ws()
	switch p.data[p.i] {
	case '{':
		return p.object()
	case '[':
		p.i++
		out := []any{}
		p.ws()
		if p.data[p.i] == ']' {
			p.i++
			return out
		}
		for {
			out = append(out, p.value())
			p.ws()
			c := p.data[p.i]
			p.i++
			if c == ']' {
				return out
			}
		}
	case '"':
		return p.str()
	case 't':
		p.i += 4
		return true
	case 'f':
		p.i += 5
		return false
	case 'n':
		p.i += 4
		return nil
	}
	start := p.i
	for p.i < len(p.data) && isNumberByte(p.data[p.i]) {
		p.i++
	}
	f, err := strconv.ParseFloat(string(p.data[start:p.i]), 64)
	if err != nil {
		p.failed = true
	}
	return f
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// str reads a string at p.i: plain ASCII as it is, anything else as
// encoding/json unquotes it.
func (p *orderedParser) str() string {
	start := p.i
	p.i++
	plain := true
	for p.data[p.i] != '"' {
		c := p.data[p.i]
		if c == '\\' {
			plain = false
			p.i++
		} else if c >= utf8.RuneSelf {
			plain = false
		}
		p.i++
	}
	p.i++
	if plain {
		return string(p.data[start+1 : p.i-1])
	}
	var s string
	if json.Unmarshal(p.data[start:p.i], &s) != nil {
		p.failed = true
	}
	return s
}

// object reads an object at p.i. Its members go into a map while the
// keys other than array indexes come in ascending order (JavaScript's
// order is then Keys order); from the first that does not, into an
// Object, which orders them as JavaScript does.
func (p *orderedParser) object() any {
	p.i++
	m := map[string]any{}
	var o *Object
	var last string
	hasLast := false
	for {
		p.ws()
		if p.data[p.i] == '}' {
			p.i++
			break
		}
		k := p.str()
		p.ws()
		p.i++ // the colon
		v := p.value()
		if o == nil {
			if _, idx := arrayIndex(k); !idx {
				if hasLast && compareJSKeys(last, k) >= 0 {
					// out of Keys order, or a key again
					o = p.fromMap(m)
				}
				last, hasLast = k, true
			}
		}
		if o != nil {
			o.Set(k, v)
		} else {
			m[k] = v
		}
		p.ws()
		if p.data[p.i] == ',' {
			p.i++
		}
	}
	if o == nil {
		return m
	}
	if InKeysOrder(o.names) {
		return o.Map()
	}
	return o
}

// fromMap starts an Object with the members read so far into m, in the
// order they were read: Keys order, which is how they came.
func (p *orderedParser) fromMap(m map[string]any) *Object {
	keys := p.keys[:0]
	for name := range m {
		keys = append(keys, name)
	}
	SortKeys(keys)
	o := NewObject(len(m) + 1)
	for _, name := range keys {
		o.Set(name, m[name])
	}
	clear(keys)
	p.keys = keys[:0]
	return o
}

// keysInOrder reports, without allocating, whether every object of the
// JSON text data (any bytes: text that is not JSON answers either way)
// surely has its keys in Keys order: each key
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
			if d--; d < -1 {
				return false // not JSON: Decode says why
			}
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

// AppendGoJSONOrdered is AppendGoJSON that also writes a *Object, each
// object in the order JavaScript walks it: a *Object in its own order, a
// map in Keys order (not sorted as encoding/json sorts a map's keys). So
// the text's JSON.parse order is the value's walk order, and
// DecodeOrdered reads back the same value, which AppendGoJSONOrdered
// then writes as the same bytes.
func AppendGoJSONOrdered(b []byte, v any) (_ []byte, ok bool) {
	switch t := v.(type) {
	case *Object:
		return appendMembers(b, t.names, func(i int) any { return t.vals[i] })
	case map[string]any:
		if t == nil {
			return append(b, "null"...), true
		}
		keys := Keys(t)
		return appendMembers(b, keys, func(i int) any { return t[keys[i]] })
	case []any:
		return appendArray(b, t, AppendGoJSONOrdered)
	}
	return AppendGoJSON(b, v)
}

// appendMembers writes an object's members in the order of keys, the
// i-th member's value being at(i).
func appendMembers(b []byte, keys []string, at func(int) any) (_ []byte, ok bool) {
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(AppendGoJSONString(b, k), ':')
		if b, ok = AppendGoJSONOrdered(b, at(i)); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}
