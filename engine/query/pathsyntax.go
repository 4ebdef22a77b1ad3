package query

import (
	"strconv"
	"unicode/utf16"

	"github.com/theory/jsonpath/spec"
)

// walkPath walks src and returns the walk, or the reference's text for
// the first rule src breaks.
func walkPath(src string) (*pathScan, string) {
	p := &pathScan{s: utf16Units(src)}
	if what, at, failed := p.check(); failed {
		return nil, "Invalid JSONPath: " + what + " at position " + strconv.Itoa(at) + " in '" + src + "'"
	}
	return p, ""
}

// pathScan walks a query's UTF-16 code units.
type pathScan struct {
	s   []uint16
	pos int
	// segs are the query's segments, once the walk took it whole
	segs []*spec.Segment
}

// pathFail carries the first broken rule out of the walk.
type pathFail struct {
	what string
	at   int
}

func (p *pathScan) check() (what string, at int, failed bool) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(pathFail)
			if !ok {
				panic(r)
			}
			what, at, failed = f.what, f.at, true
		}
	}()
	if len(p.s) == 0 {
		p.fail("empty query", 0)
	}
	if p.s[0] != '$' {
		p.fail("query must start with '$'", 0)
	}
	p.pos = 1
	segs := p.segments()
	if p.pos != len(p.s) {
		p.fail("unexpected token", p.pos)
	}
	p.segs = segs
	return "", 0, false
}

func (p *pathScan) fail(what string, at int) { panic(pathFail{what, at}) }

func (p *pathScan) cc(at int) int {
	if at < len(p.s) {
		return int(p.s[at])
	}
	return -1
}

func (p *pathScan) skipWS() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func isDigitCU(c int) bool { return c >= '0' && c <= '9' }

func isLowerCU(c int) bool { return c >= 'a' && c <= 'z' }

func isNameStartCU(c int) bool {
	return c >= 'A' && c <= 'Z' || isLowerCU(c) || c == '_' || c >= 0x80
}

func (p *pathScan) identifier() string {
	start := p.pos
	for c := p.cc(p.pos); isLowerCU(c) || c == '_' || isDigitCU(c); c = p.cc(p.pos) {
		p.pos++
	}
	return string(utf16.Decode(p.s[start:p.pos]))
}

// memberName reads a shorthand member name and returns it.
func (p *pathScan) memberName() string {
	start := p.pos
	if !isNameStartCU(p.cc(p.pos)) {
		p.fail("expected member name", p.pos)
	}
	for p.pos < len(p.s) {
		c := int(p.s[p.pos])
		if c >= 0xD800 && c <= 0xDFFF {
			if d := p.cc(p.pos + 1); c >= 0xDC00 || d < 0xDC00 || d > 0xDFFF {
				p.fail("lone surrogate in member name", p.pos)
			}
			p.pos += 2
			continue
		}
		if !isNameStartCU(c) && !isDigitCU(c) {
			break
		}
		p.pos++
	}
	return string(utf16.Decode(p.s[start:p.pos]))
}

func (p *pathScan) hex4() int {
	v := 0
	for range 4 {
		c := p.cc(p.pos)
		var d int
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		default:
			p.fail("invalid unicode escape", p.pos)
		}
		v = v<<4 | d
		p.pos++
	}
	return v
}

// unicodeEscape reads a \u escape's digits (a surrogate pair's two
// escapes) and appends the code units to val.
func (p *pathScan) unicodeEscape(val []uint16) []uint16 {
	hi := p.hex4()
	switch {
	case hi >= 0xD800 && hi <= 0xDBFF:
		if p.cc(p.pos) != '\\' || p.cc(p.pos+1) != 'u' {
			p.fail("lone surrogate in unicode escape", p.pos)
		}
		p.pos += 2
		lo := p.hex4()
		if lo < 0xDC00 || lo > 0xDFFF {
			p.fail("invalid low surrogate in unicode escape", p.pos)
		}
		return append(val, uint16(hi), uint16(lo))
	case hi >= 0xDC00 && hi <= 0xDFFF:
		p.fail("lone surrogate in unicode escape", p.pos)
	}
	return append(val, uint16(hi))
}

// escape reads an escape after its backslash and appends the code units
// it stands for to val: validated and decoded in one reading.
func (p *pathScan) escape(quote int, val []uint16) []uint16 {
	c := p.cc(p.pos)
	p.pos++
	switch c {
	case 'b':
		c = '\b'
	case 'f':
		c = '\f'
	case 'n':
		c = '\n'
	case 'r':
		c = '\r'
	case 't':
		c = '\t'
	case '/', '\\':
	case 'u':
		return p.unicodeEscape(val)
	default:
		if c != quote {
			p.fail("invalid escape sequence", p.pos-1)
		}
	}
	return append(val, uint16(c))
}

// stringLiteral reads a string literal and returns its value.
func (p *pathScan) stringLiteral() string {
	quote := int(p.s[p.pos])
	p.pos++
	var val []uint16
	for p.pos < len(p.s) {
		c := int(p.s[p.pos])
		switch {
		case c == quote:
			p.pos++
			return string(utf16.Decode(val))
		case c == '\\':
			p.pos++
			val = p.escape(quote, val)
			continue
		case c < ' ':
			p.fail("unescaped control character in string literal", p.pos)
		case c >= 0xD800 && c <= 0xDFFF:
			if d := p.cc(p.pos + 1); c >= 0xDC00 || d < 0xDC00 || d > 0xDFFF {
				p.fail("lone surrogate in string literal", p.pos)
			}
			val = append(val, p.s[p.pos], p.s[p.pos+1])
			p.pos += 2
			continue
		}
		val = append(val, p.s[p.pos])
		p.pos++
	}
	p.fail("unterminated string literal", p.pos)
	return ""
}

// intToken reads an index or slice bound: "0" or an optional '-' and a
// digit other than 0 first, within JavaScript's safe integers.
func (p *pathScan) intToken() int {
	start := p.pos
	neg := false
	if p.cc(p.pos) == '-' {
		neg = true
		p.pos++
	}
	first := p.cc(p.pos)
	if !isDigitCU(first) {
		p.fail("expected integer", p.pos)
	}
	p.pos++
	if first == '0' {
		if isDigitCU(p.cc(p.pos)) {
			p.fail("leading zeros are not allowed", start)
		}
		if neg {
			p.fail("'-0' is not allowed as an index", start)
		}
		return 0
	}
	for isDigitCU(p.cc(p.pos)) {
		p.pos++
	}
	digits := p.pos - start
	if neg {
		digits--
	}
	const maxSafe = 1<<53 - 1
	if digits > 16 {
		p.fail("integer out of interoperable range", start)
	}
	n, _ := strconv.ParseInt(string(utf16.Decode(p.s[start:p.pos])), 10, 64)
	if n > maxSafe || n < -maxSafe {
		p.fail("integer out of interoperable range", start)
	}
	return int(n)
}

// numberLiteral reads a number literal and returns its value.
func (p *pathScan) numberLiteral() float64 {
	start := p.pos
	if p.cc(p.pos) == '-' {
		p.pos++
	}
	if !isDigitCU(p.cc(p.pos)) {
		p.fail("expected digit in number literal", p.pos)
	}
	if p.cc(p.pos) == '0' {
		p.pos++
		if isDigitCU(p.cc(p.pos)) {
			p.fail("leading zeros are not allowed", start)
		}
	} else {
		for isDigitCU(p.cc(p.pos)) {
			p.pos++
		}
	}
	if p.cc(p.pos) == '.' {
		p.pos++
		if !isDigitCU(p.cc(p.pos)) {
			p.fail("expected digit after decimal point", p.pos)
		}
		for isDigitCU(p.cc(p.pos)) {
			p.pos++
		}
	}
	if e := p.cc(p.pos); e == 'e' || e == 'E' {
		p.pos++
		if s := p.cc(p.pos); s == '+' || s == '-' {
			p.pos++
		}
		if !isDigitCU(p.cc(p.pos)) {
			p.fail("expected digit in exponent", p.pos)
		}
		for isDigitCU(p.cc(p.pos)) {
			p.pos++
		}
	}
	return numberValue(p.s[start:p.pos])
}

// segments reads segments and returns them as the library's spec types;
// whether they make a singular query is the path's to say (path.go).
func (p *pathScan) segments() []*spec.Segment {
	var segs []*spec.Segment
	for {
		save := p.pos
		p.skipWS()
		switch p.cc(p.pos) {
		case '[':
			segs = append(segs, spec.Child(p.bracketed()...))
		case '.':
			if p.cc(p.pos+1) == '.' {
				p.pos += 2
				segs = append(segs, spec.Descendant(p.descendant()...))
			} else {
				p.pos++
				if p.cc(p.pos) == '*' {
					p.pos++
					segs = append(segs, spec.Child(spec.Wildcard()))
				} else {
					segs = append(segs, spec.Child(spec.Name(p.memberName())))
				}
			}
		default:
			p.pos = save
			return segs
		}
	}
}

func (p *pathScan) descendant() []spec.Selector {
	switch p.cc(p.pos) {
	case '[':
		return p.bracketed()
	case '*':
		p.pos++
		return []spec.Selector{spec.Wildcard()}
	}
	return []spec.Selector{spec.Name(p.memberName())}
}

// bracketed reads a bracketed selection.
func (p *pathScan) bracketed() []spec.Selector {
	p.pos++
	p.skipWS()
	var sels []spec.Selector
	for {
		sels = append(sels, p.selector())
		p.skipWS()
		switch p.cc(p.pos) {
		case ',':
			p.pos++
			p.skipWS()
			continue
		case ']':
			p.pos++
			return sels
		}
		p.fail("expected ',' or ']'", p.pos)
	}
}

// selector reads one selector.
func (p *pathScan) selector() spec.Selector {
	c := p.cc(p.pos)
	switch {
	case c == '\'' || c == '"':
		return spec.Name(p.stringLiteral())
	case c == '*':
		p.pos++
		return spec.Wildcard()
	case c == '?':
		p.pos++
		p.skipWS()
		x := p.logicalOr()
		return &pathFilter{FilterSelector: spec.Filter(), expr: x}
	case c == ':' || c == '-' || isDigitCU(c):
		return p.indexOrSlice()
	}
	p.fail("expected a selector", p.pos)
	return nil
}

// indexOrSlice reads an index or a slice.
func (p *pathScan) indexOrSlice() spec.Selector {
	var bounds [3]any // start, end, step; nil when left out
	if p.cc(p.pos) != ':' {
		bounds[0] = p.intToken()
	}
	save := p.pos
	p.skipWS()
	if p.cc(p.pos) != ':' {
		p.pos = save
		return spec.Index(bounds[0].(int))
	}
	p.pos++
	p.skipWS()
	if c := p.cc(p.pos); c == '-' || isDigitCU(c) {
		bounds[1] = p.intToken()
	}
	save = p.pos
	p.skipWS()
	if p.cc(p.pos) == ':' {
		p.pos++
		p.skipWS()
		if c := p.cc(p.pos); c == '-' || isDigitCU(c) {
			bounds[2] = p.intToken()
		}
	} else {
		p.pos = save
	}
	return spec.Slice(bounds[:]...)
}
