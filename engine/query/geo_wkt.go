package query

import (
	"math"
	"strconv"
	"strings"

	"github.com/jetflow/jetflow/engine/value"
)

// Well-Known Text both ways, as the reference reads and writes it.
//
// Reading: keywords in any case; whitespace (space, tab, CR, LF) between
// tokens but none before the first or after the last; a Z, M or ZM tag
// after whitespace. Positions of one geometry share one arity: two or
// three numbers untagged, three with Z or M, four with ZM; M is dropped
// and ZM keeps Z. A line has two positions or more, a ring four or more
// and ends where it starts. EMPTY stands only for a whole geometry.
// Anything else is not WKT and reads as nothing.

type wktParser struct {
	s   string
	pos int
}

func isWKTSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// parseWKT returns the geometry the text denotes; ok is false otherwise.
func parseWKT(s string) (g map[string]any, ok bool) {
	if s == "" || isWKTSpace(s[0]) || isWKTSpace(s[len(s)-1]) {
		return nil, false
	}
	p := &wktParser{s: s}
	g, ok = p.geometry(0)
	if !ok || p.pos != len(s) {
		return nil, false
	}
	return g, true
}

func (p *wktParser) skipSpace() {
	for p.pos < len(p.s) && isWKTSpace(p.s[p.pos]) {
		p.pos++
	}
}

// word reads a run of letters, as written.
func (p *wktParser) word() string {
	start := p.pos
	for p.pos < len(p.s) {
		c := p.s[p.pos] | 0x20
		if c < 'a' || c > 'z' {
			break
		}
		p.pos++
	}
	return p.s[start:p.pos]
}

func (p *wktParser) peek(c byte) bool {
	p.skipSpace()
	return p.pos < len(p.s) && p.s[p.pos] == c
}

func (p *wktParser) eat(c byte) bool {
	if p.peek(c) {
		p.pos++
		return true
	}
	return false
}

var wktTypes = [...]string{
	"Point", "MultiPoint", "LineString", "MultiLineString",
	"Polygon", "MultiPolygon", "GeometryCollection",
}

// wktType is the GeoJSON type a keyword names, in any case.
func wktType(word string) (string, bool) {
	for _, t := range wktTypes {
		if strings.EqualFold(word, t) {
			return t, true
		}
	}
	return "", false
}

// dims: how many numbers a position has (0 untagged: 2 or 3) and how
// many of them to keep.
type dims struct{ want, keep int }

func (p *wktParser) geometry(depth int) (map[string]any, bool) {
	if depth > 64 {
		return nil, false
	}
	p.skipSpace()
	typ, ok := wktType(p.word())
	if !ok {
		return nil, false
	}
	d := dims{}
	save := p.pos
	p.skipSpace()
	if p.pos > save {
		switch tag := p.word(); {
		case strings.EqualFold(tag, "Z"):
			d = dims{3, 3}
		case strings.EqualFold(tag, "M"):
			d = dims{3, 2}
		case strings.EqualFold(tag, "ZM"):
			d = dims{4, 3}
		case tag == "":
		case strings.EqualFold(tag, "EMPTY"):
			p.pos = save
		default:
			return nil, false
		}
	}
	p.skipSpace()
	if at := p.pos; strings.EqualFold(p.word(), "EMPTY") {
		if typ == "GeometryCollection" {
			return map[string]any{"type": typ, "geometries": []any{}}, true
		}
		return map[string]any{"type": typ, "coordinates": []any{}}, true
	} else {
		p.pos = at
	}
	if typ == "GeometryCollection" {
		if !p.eat('(') {
			return nil, false
		}
		var members []any
		for {
			g, ok := p.geometry(depth + 1)
			if !ok {
				return nil, false
			}
			members = append(members, g)
			if !p.eat(',') {
				break
			}
		}
		if !p.eat(')') {
			return nil, false
		}
		return map[string]any{"type": typ, "geometries": members}, true
	}
	arity := 0
	var coords any
	switch typ {
	case "Point":
		coords, ok = p.wrapped(func() (any, bool) { return p.position(d, &arity) })
	case "MultiPoint":
		coords, ok = p.list(func() (any, bool) {
			if p.peek('(') {
				return p.wrapped(func() (any, bool) { return p.position(d, &arity) })
			}
			return p.position(d, &arity)
		})
	case "LineString":
		coords, ok = p.line(d, &arity, 2, false)
	case "MultiLineString":
		coords, ok = p.list(func() (any, bool) { return p.line(d, &arity, 2, false) })
	case "Polygon":
		coords, ok = p.list(func() (any, bool) { return p.line(d, &arity, 4, true) })
	case "MultiPolygon":
		coords, ok = p.list(func() (any, bool) {
			return p.list(func() (any, bool) { return p.line(d, &arity, 4, true) })
		})
	}
	if !ok {
		return nil, false
	}
	return map[string]any{"type": typ, "coordinates": coords}, true
}

// wrapped reads "(" item ")".
func (p *wktParser) wrapped(item func() (any, bool)) (any, bool) {
	if !p.eat('(') {
		return nil, false
	}
	v, ok := item()
	if !ok || !p.eat(')') {
		return nil, false
	}
	return v, true
}

// list reads "(" item {"," item} ")".
func (p *wktParser) list(item func() (any, bool)) (any, bool) {
	if !p.eat('(') {
		return nil, false
	}
	var out []any
	for {
		v, ok := item()
		if !ok {
			return nil, false
		}
		out = append(out, v)
		if !p.eat(',') {
			break
		}
	}
	if !p.eat(')') {
		return nil, false
	}
	return out, true
}

// line reads a parenthesised list of positions, at least min of them,
// closed when ring is set.
func (p *wktParser) line(d dims, arity *int, min int, ring bool) (any, bool) {
	v, ok := p.list(func() (any, bool) { return p.position(d, arity) })
	if !ok {
		return nil, false
	}
	pts := v.([]any)
	if len(pts) < min {
		return nil, false
	}
	if ring {
		first, last := pts[0].([]any), pts[len(pts)-1].([]any)
		for i := range first {
			if first[i].(float64) != last[i].(float64) {
				return nil, false
			}
		}
	}
	return pts, true
}

// position reads the numbers of one position; every position of a
// geometry must have the arity of its first.
func (p *wktParser) position(d dims, arity *int) (any, bool) {
	var buf [5]float64
	nums := buf[:0]
	for {
		p.skipSpace()
		n, ok := p.number()
		if !ok {
			break
		}
		nums = append(nums, n)
		if len(nums) > 4 {
			return nil, false
		}
	}
	switch {
	case d.want == 0 && (len(nums) == 2 || len(nums) == 3):
	case d.want != 0 && len(nums) == d.want:
	default:
		return nil, false
	}
	if *arity == 0 {
		*arity = len(nums)
	} else if *arity != len(nums) {
		return nil, false
	}
	keep := len(nums)
	if d.keep != 0 {
		keep = d.keep
	}
	out := make([]any, keep)
	for i := range out {
		out[i] = nums[i]
	}
	return out, true
}

// number reads [+-]?(digits[.digits*]|.digits)([eE][+-]?digits)?; a
// magnitude past float64 is ±Infinity, as JavaScript's Number reads it.
func (p *wktParser) number() (float64, bool) {
	s, i := p.s, p.pos
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := func() int {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - j
	}
	intPart := digits()
	frac := 0
	if i < len(s) && s[i] == '.' {
		i++
		frac = digits()
	}
	if intPart == 0 && frac == 0 {
		return 0, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			i = j
			return 0, false
		}
	}
	if i < len(s) && !isWKTSpace(s[i]) && s[i] != ',' && s[i] != ')' {
		return 0, false
	}
	text := s[p.pos:i]
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !isRangeErr(err) {
		return 0, false
	}
	p.pos = i
	return f, true
}

// ---- writing

// writeWKT spells a value as WKT; ok is false for a value with no
// spelling. A bare position is a POINT and a Feature is its geometry. A
// FeatureCollection is a GEOMETRYCOLLECTION of what its members spell,
// leaving out members that are no geometry at all (a scalar, an untyped
// object, a Feature whose geometry is not an object or is a
// FeatureCollection) but failing on a malformed one or one of an unknown
// type; a GeometryCollection's members must all be geometries.
func writeWKT(v any) (string, bool) {
	var b strings.Builder
	if wktMember(&b, v, 0) != wktOK {
		return "", false
	}
	return b.String(), true
}

type wktKind int

const (
	wktOK   wktKind = iota
	wktNone         // not a geometry: a collection leaves it out
	wktBad          // a malformed geometry: nothing is spelled
)

func wktPos(p [2]float64) string {
	return value.NumberString(p[0]) + " " + value.NumberString(p[1])
}

func wktMember(b *strings.Builder, v any, depth int) wktKind {
	if pos, ok := positionOf(v); ok {
		b.WriteString("POINT (" + wktPos(pos) + ")")
		return wktOK
	}
	m, ok := v.(map[string]any)
	if !ok || depth > 64 {
		return wktNone
	}
	switch m["type"] {
	case "Feature":
		g, ok := m["geometry"].(map[string]any)
		if !ok || g["type"] == "FeatureCollection" {
			return wktNone
		}
		return wktMember(b, g, depth+1)
	case "FeatureCollection":
		list, _ := m["features"].([]any)
		var parts []string
		for _, f := range list {
			var sub strings.Builder
			switch wktMember(&sub, f, depth+1) {
			case wktBad:
				return wktBad
			case wktOK:
				parts = append(parts, sub.String())
			}
		}
		writeCollection(b, parts)
		return wktOK
	case "GeometryCollection", "Point", "MultiPoint", "LineString", "MultiLineString", "Polygon", "MultiPolygon":
		if !writeGeometry(b, m, depth) {
			return wktBad
		}
		return wktOK
	}
	if _, typed := m["type"]; typed {
		return wktBad // a type WKT has no word for
	}
	return wktNone
}

func writeCollection(b *strings.Builder, parts []string) {
	b.WriteString("GEOMETRYCOLLECTION")
	if len(parts) == 0 {
		b.WriteString(" EMPTY")
		return
	}
	b.WriteString(" (" + strings.Join(parts, ", ") + ")")
}

// writeGeometry spells one geometry object; false when it is malformed.
func writeGeometry(b *strings.Builder, v any, depth int) bool {
	m, ok := v.(map[string]any)
	if !ok || depth > 64 {
		return false
	}
	if m["type"] == "GeometryCollection" {
		list, ok := m["geometries"].([]any)
		if !ok {
			return false
		}
		parts := make([]string, len(list))
		for i, g := range list {
			var sub strings.Builder
			if !writeGeometry(&sub, g, depth+1) {
				return false
			}
			parts[i] = sub.String()
		}
		writeCollection(b, parts)
		return true
	}
	typ, _ := m["type"].(string)
	// levels: how deep the position lists nest under the coordinates
	levels := map[string]int{
		"Point": 0, "MultiPoint": 1, "LineString": 1,
		"MultiLineString": 2, "Polygon": 2, "MultiPolygon": 3,
	}
	n, known := levels[typ]
	if !known {
		return false
	}
	coords, ok := m["coordinates"].([]any)
	if !ok {
		return false
	}
	b.WriteString(strings.ToUpper(typ))
	if len(coords) == 0 {
		b.WriteString(" EMPTY")
		return true
	}
	b.WriteByte(' ')
	if typ == "Point" {
		p, ok := positionOf(coords)
		if !ok {
			return false
		}
		b.WriteString("(" + wktPos(p) + ")")
		return true
	}
	return writeNested(b, coords, n, typ == "MultiPoint")
}

// writeNested writes a parenthesised list nested levels deep; a
// MultiPoint wraps each position in its own parentheses.
func writeNested(b *strings.Builder, list []any, levels int, wrapEach bool) bool {
	if len(list) == 0 {
		return false
	}
	b.WriteByte('(')
	for i, item := range list {
		if i > 0 {
			b.WriteString(", ")
		}
		if levels == 1 {
			p, ok := positionOf(item)
			if !ok {
				return false
			}
			if wrapEach {
				b.WriteString("(" + wktPos(p) + ")")
			} else {
				b.WriteString(wktPos(p))
			}
			continue
		}
		sub, ok := item.([]any)
		if !ok || !writeNested(b, sub, levels-1, false) {
			return false
		}
	}
	b.WriteByte(')')
	return true
}

// finite reports a float that is neither NaN nor ±Infinity.
func finite(f float64) bool { return !math.IsInf(f, 0) && f == f }
