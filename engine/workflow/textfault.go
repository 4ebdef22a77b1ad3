package workflow

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/jetflow/jetflow/engine/value"
)

// textFault locates, in syntactically valid JSON text, the first value
// the reference cannot canonicalize: a string with an unpaired surrogate
// escape, or a number beyond the double range (JSON.parse reads it as
// Infinity). The reference reports the first in its canonical walk,
// members sorted by UTF-16 code units and a member's name before its
// value, at the JSON Pointer of the value (of the object, for a name).
// It returns nil when the text holds no such value or does not parse;
// it runs only after a fast decode has failed, so it favors plainness.
func textFault(data []byte) error {
	if !json.Valid(data) {
		return nil // the scanner below takes valid text only
	}
	s := textScanner{data: data}
	root, ok := s.value()
	if !ok {
		return nil
	}
	return root.fault("")
}

// textNode is a parsed value reduced to what the walk needs.
type textNode struct {
	bad     string // why this scalar is not JSON data, "" when it is
	members map[string]textMember
	elems   []*textNode
}

type textMember struct {
	name    string
	units   []uint16 // the name's UTF-16 code units, unpaired surrogates kept
	badName bool
	value   *textNode
}

func (n *textNode) fault(path string) error {
	if n.bad != "" {
		return errors.New(n.bad + " at " + value.Place(path))
	}
	for i, e := range n.elems {
		if err := e.fault(path + "/" + strconv.Itoa(i)); err != nil {
			return err
		}
	}
	// sorted by code units: a name with an unpaired surrogate sorts by
	// the surrogate, not by the U+FFFD Go would decode it to
	members := make([]textMember, 0, len(n.members))
	for _, m := range n.members {
		members = append(members, m)
	}
	slices.SortFunc(members, func(a, b textMember) int { return slices.Compare(a.units, b.units) })
	for _, m := range members {
		if m.badName {
			return errors.New(unpaired + " at " + value.Place(path))
		}
		if err := m.value.fault(path + "/" + value.EncodePointerSegment(m.name)); err != nil {
			return err
		}
	}
	return nil
}

const unpaired = "a string with an unpaired surrogate is not valid Unicode"

type textScanner struct {
	data []byte
	i    int
}

func (s *textScanner) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *textScanner) value() (*textNode, bool) {
	s.space()
	if s.i >= len(s.data) {
		return nil, false
	}
	switch c := s.data[s.i]; {
	case c == '{':
		return s.object()
	case c == '[':
		return s.array()
	case c == '"':
		_, bad, ok := s.str()
		n := &textNode{}
		if bad {
			n.bad = unpaired
		}
		return n, ok
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	default:
		for s.i < len(s.data) && s.data[s.i] >= 'a' && s.data[s.i] <= 'z' {
			s.i++
		}
		return &textNode{}, true
	}
}

func (s *textScanner) object() (*textNode, bool) {
	n := &textNode{members: map[string]textMember{}}
	s.i++ // {
	s.space()
	if s.i < len(s.data) && s.data[s.i] == '}' {
		s.i++
		return n, true
	}
	for {
		s.space()
		start := s.i
		name, bad, ok := s.str()
		if !ok {
			return nil, false
		}
		units := codeUnits(s.data[start+1 : s.i-1])
		s.space()
		if s.i >= len(s.data) || s.data[s.i] != ':' {
			return nil, false
		}
		s.i++
		v, ok := s.value()
		if !ok {
			return nil, false
		}
		// the last duplicate wins, as in JSON.parse
		n.members[string(utf16Bytes(units))] = textMember{name: name, units: units, badName: bad, value: v}
		if done, ok := s.sep('}'); !ok || done {
			return n, ok
		}
	}
}

func (s *textScanner) array() (*textNode, bool) {
	n := &textNode{elems: []*textNode{}}
	s.i++ // [
	s.space()
	if s.i < len(s.data) && s.data[s.i] == ']' {
		s.i++
		return n, true
	}
	for {
		v, ok := s.value()
		if !ok {
			return nil, false
		}
		n.elems = append(n.elems, v)
		if done, ok := s.sep(']'); !ok || done {
			return n, ok
		}
	}
}

// sep reads what follows a member or an element: done at end, the
// closing bracket; ok is false for anything but it or a comma.
func (s *textScanner) sep(end byte) (done, ok bool) {
	s.space()
	if s.i >= len(s.data) {
		return false, false
	}
	s.i++
	switch s.data[s.i-1] {
	case ',':
		return false, true
	case end:
		return true, true
	}
	return false, false
}

// str reads a string: its value (an unpaired surrogate decoded as
// U+FFFD), whether it escapes an unpaired surrogate, and whether it
// parsed.
func (s *textScanner) str() (string, bool, bool) {
	if s.i >= len(s.data) || s.data[s.i] != '"' {
		return "", false, false
	}
	start := s.i
	for s.i++; s.i < len(s.data); s.i++ {
		switch s.data[s.i] {
		case '\\':
			s.i++
		case '"':
			s.i++
			raw := s.data[start:s.i]
			var out string
			if json.Unmarshal(raw, &out) != nil {
				return "", false, false
			}
			return out, loneSurrogate(raw), true
		}
	}
	return "", false, false
}

func (s *textScanner) number() (*textNode, bool) {
	start := s.i
	for s.i < len(s.data) {
		c := s.data[s.i]
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			break
		}
		s.i++
	}
	f, err := strconv.ParseFloat(string(s.data[start:s.i]), 64)
	n := &textNode{}
	if math.IsInf(f, 0) {
		n.bad = value.NumberString(f) + " is not a JSON number"
	} else if err != nil {
		return nil, false
	}
	return n, true
}

// codeUnits decodes the body of a valid JSON string (between its quotes)
// to UTF-16 code units, keeping escaped unpaired surrogates.
func codeUnits(body []byte) []uint16 {
	var out []uint16
	for i := 0; i < len(body); {
		if body[i] != '\\' {
			r, size := utf8.DecodeRune(body[i:])
			out = utf16.AppendRune(out, r)
			i += size
			continue
		}
		if u, ok := escapedUnit(body, i); ok {
			out = append(out, u)
			i += 6
			continue
		}
		if i+1 < len(body) {
			out = append(out, uint16(unescape[body[i+1]]))
		}
		i += 2
	}
	return out
}

// unescape maps the character after a backslash to what it stands for.
var unescape = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// utf16Bytes makes code units a map key.
func utf16Bytes(units []uint16) []byte {
	out := make([]byte, 0, 2*len(units))
	for _, u := range units {
		out = append(out, byte(u>>8), byte(u))
	}
	return out
}
