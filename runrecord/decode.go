package runrecord

import (
	"encoding/json"
	"strconv"
)

// parseRecord reads a record in the layout Encode writes, scanning the
// embedded JSON once (encoding/json validates a document in one pass and
// decodes it in another, and scans each raw value again to find its end:
// a tenth of a step that has to read its run). It reports false for
// anything else (other field orders, escaped strings, unusual numbers),
// and DecodeRecord then leaves the record to encoding/json: whenever it
// reports true, the record is the one encoding/json would have decoded.
func parseRecord(data []byte) (*Record, bool) {
	p := recParser{d: data}
	r := &Record{}
	if !p.byte('{') {
		return nil, false
	}
	if !p.key("state") {
		return nil, false
	}
	raw, ok := p.value()
	if !ok {
		return nil, false
	}
	r.State = json.RawMessage(append([]byte(nil), raw...))
	if p.next("status") {
		if raw, ok = p.value(); !ok {
			return nil, false
		}
		if r.Status, ok = parseStatus(raw); !ok && json.Unmarshal(raw, &r.Status) != nil {
			return nil, false
		}
	}
	if p.next("outbox") {
		if r.Outbox, ok = p.outbox(); !ok {
			return nil, false
		}
	}
	if p.next("applied") {
		if r.Applied, ok = p.uints(); !ok {
			return nil, false
		}
	}
	if p.next("rejected") {
		if raw, ok = p.value(); !ok || json.Unmarshal(raw, &r.Rejected) != nil {
			return nil, false
		}
	}
	if p.next("ignored") {
		if raw, ok = p.value(); !ok || json.Unmarshal(raw, &r.Ignored) != nil {
			return nil, false
		}
	}
	if p.next("order") {
		if r.Order, ok = p.order(); !ok {
			return nil, false
		}
	}
	if p.next("timers") && !p.flag(&r.Timers) {
		return nil, false
	}
	if p.next("deadlineOnly") && !p.flag(&r.DeadlineOnly) {
		return nil, false
	}
	if p.next("tracked") && !p.flag(&r.Tracked) {
		return nil, false
	}
	if p.next("armed") {
		if raw, ok = p.value(); !ok || json.Unmarshal(raw, &r.Armed) != nil {
			return nil, false
		}
	}
	if p.next("parent") {
		if raw, ok = p.value(); !ok || json.Unmarshal(raw, &r.Parent) != nil {
			return nil, false
		}
	}
	if p.next("children") {
		if raw, ok = p.value(); !ok || json.Unmarshal(raw, &r.Children) != nil {
			return nil, false
		}
	}
	if p.next("priority") {
		if raw, ok = p.value(); !ok || json.Unmarshal(raw, &r.Priority) != nil {
			return nil, false
		}
	}
	if !p.byte('}') {
		return nil, false
	}
	p.ws()
	return r, p.i == len(p.d)
}

// recParser walks a record; every method reports false where the input
// leaves the fast path.
type recParser struct {
	d []byte
	i int
}

func (p *recParser) ws() {
	for p.i < len(p.d) {
		switch p.d[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// byte consumes c after optional whitespace.
func (p *recParser) byte(c byte) bool {
	p.ws()
	if p.i < len(p.d) && p.d[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *recParser) lit(s string) bool {
	p.ws()
	if len(p.d)-p.i >= len(s) && string(p.d[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

// key consumes "name": exactly (no space inside the quotes).
func (p *recParser) key(name string) bool {
	save := p.i
	if p.byte('"') && len(p.d)-p.i > len(name) && string(p.d[p.i:p.i+len(name)]) == name && p.d[p.i+len(name)] == '"' {
		p.i += len(name)
		p.i++
		if p.byte(':') {
			return true
		}
	}
	p.i = save
	return false
}

// next consumes `,"name":` when the next member is name.
func (p *recParser) next(name string) bool {
	save := p.i
	if p.byte(',') && p.key(name) {
		return true
	}
	p.i = save
	return false
}

// flag reads true or false into *dst.
func (p *recParser) flag(dst *bool) bool {
	switch {
	case p.lit("true"):
		*dst = true
	case p.lit("false"):
		*dst = false
	default:
		return false
	}
	return true
}

// str reads a string of printable ASCII without escapes: what Encode
// writes for ids, kinds, subjects and headers (encoding/json would
// rewrite invalid UTF-8, so anything else goes its way).
func (p *recParser) str() (string, bool) {
	b, ok := p.plain()
	if !ok {
		return "", false
	}
	return string(b), true
}

// plain is str's bytes, without copying them.
func (p *recParser) plain() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start := p.i
	for ; p.i < len(p.d); p.i++ {
		switch c := p.d[p.i]; {
		case c == '"':
			p.i++
			return p.d[start : p.i-1], true
		case c < 0x20 || c >= 0x80 || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// uint reads a plain non-negative integer that fits a uint64.
func (p *recParser) uint() (uint64, bool) {
	p.ws()
	start := p.i
	for p.i < len(p.d) && p.d[p.i] >= '0' && p.d[p.i] <= '9' {
		p.i++
	}
	if p.i == start || p.d[start] == '0' && p.i-start > 1 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(p.d[start:p.i]), 10, 64)
	return n, err == nil
}

// list calls item for each element of a non-empty array (encoding/json
// keeps an empty one empty, not nil; Encode never writes one).
func (p *recParser) list(item func() bool) bool {
	if !p.byte('[') {
		return false
	}
	for {
		if !item() {
			return false
		}
		if p.byte(']') {
			return true
		}
		if !p.byte(',') {
			return false
		}
	}
}

func (p *recParser) uints() ([]uint64, bool) {
	var out []uint64
	ok := p.list(func() bool {
		n, ok := p.uint()
		out = append(out, n)
		return ok
	})
	return out, ok
}

func (p *recParser) order() (Order, bool) {
	var out Order
	ok := p.list(func() bool {
		var s Span
		var ok bool
		if !p.byte('[') {
			return false
		}
		if s.From, ok = p.uint(); !ok || !p.byte(',') {
			return false
		}
		if s.To, ok = p.uint(); !ok || !p.byte(']') || s.From > s.To {
			return false
		}
		out = append(out, s)
		return true
	})
	return out, ok
}

func (p *recParser) outbox() ([]Outgoing, bool) {
	var out []Outgoing
	ok := p.list(func() bool {
		var o Outgoing
		var ok bool
		if !p.byte('{') || !p.key("id") {
			return false
		}
		if o.ID, ok = p.str(); !ok || !p.next("kind") {
			return false
		}
		if o.Kind, ok = p.str(); !ok || !p.next("subject") {
			return false
		}
		if o.Subject, ok = p.str(); !ok {
			return false
		}
		if p.next("header") {
			if o.Header, ok = p.header(); !ok {
				return false
			}
		}
		if !p.next("data") {
			return false
		}
		raw, ok := p.value()
		if !ok || !p.byte('}') {
			return false
		}
		o.Data = json.RawMessage(append([]byte(nil), raw...))
		out = append(out, o)
		return true
	})
	return out, ok
}

func (p *recParser) header() (map[string]string, bool) {
	if !p.byte('{') {
		return nil, false
	}
	h := make(map[string]string, 4)
	if p.byte('}') {
		return h, true
	}
	for {
		k, ok := p.str()
		if !ok || !p.byte(':') {
			return nil, false
		}
		v, ok := p.str()
		if !ok {
			return nil, false
		}
		h[k] = v
		if p.byte('}') {
			return h, true
		}
		if !p.byte(',') {
			return nil, false
		}
	}
}

// maxParseDepth bounds the nesting value accepts (encoding/json accepts
// up to 10000; deeper values go its way).
const maxParseDepth = 512

// value checks one JSON value as encoding/json's scanner does and
// returns its bytes.
func (p *recParser) value() ([]byte, bool) {
	p.ws()
	start := p.i
	if !p.skip(0) {
		return nil, false
	}
	return p.d[start:p.i], true
}

func (p *recParser) skip(depth int) bool {
	if depth > maxParseDepth || p.i >= len(p.d) {
		return false
	}
	switch c := p.d[p.i]; {
	case c == '{':
		p.i++
		if p.byte('}') {
			return true
		}
		for {
			p.ws()
			if !p.skipString() || !p.byte(':') {
				return false
			}
			p.ws()
			if !p.skip(depth + 1) {
				return false
			}
			if p.byte('}') {
				return true
			}
			if !p.byte(',') {
				return false
			}
		}
	case c == '[':
		p.i++
		if p.byte(']') {
			return true
		}
		for {
			p.ws()
			if !p.skip(depth + 1) {
				return false
			}
			if p.byte(']') {
				return true
			}
			if !p.byte(',') {
				return false
			}
		}
	case c == '"':
		return p.skipString()
	case c == '-' || c >= '0' && c <= '9':
		return p.skipNumber()
	default:
		return p.lit("true") || p.lit("false") || p.lit("null")
	}
}

// skipString accepts what encoding/json's scanner accepts: any byte from
// 0x20 on (UTF-8 or not) and the JSON escapes.
func (p *recParser) skipString() bool {
	if p.i >= len(p.d) || p.d[p.i] != '"' {
		return false
	}
	for p.i++; p.i < len(p.d); p.i++ {
		switch c := p.d[p.i]; {
		case c == '"':
			p.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			p.i++
			if p.i >= len(p.d) {
				return false
			}
			switch p.d[p.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(p.d)-p.i <= 4 {
					return false
				}
				for _, h := range p.d[p.i+1 : p.i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				p.i += 4
			default:
				return false
			}
		}
	}
	return false
}

// skipNumber accepts -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (p *recParser) skipNumber() bool {
	digits := func() bool {
		start := p.i
		for p.i < len(p.d) && p.d[p.i] >= '0' && p.d[p.i] <= '9' {
			p.i++
		}
		return p.i > start
	}
	if p.d[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.d) && p.d[p.i] == '0':
		p.i++
	case !digits():
		return false
	}
	if p.i < len(p.d) && p.d[p.i] == '.' {
		p.i++
		if !digits() {
			return false
		}
	}
	if p.i < len(p.d) && (p.d[p.i] == 'e' || p.d[p.i] == 'E') {
		p.i++
		if p.i < len(p.d) && (p.d[p.i] == '+' || p.d[p.i] == '-') {
			p.i++
		}
		if !digits() {
			return false
		}
	}
	return true
}
