package authoring

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jetflow/jetflow/engine/value"
)

// maxDepth bounds the scanner's recursion, well above value.Decode's own
// nesting limit.
const maxDepth = 10000

// Source is a JSON text with the byte offset of every value and member
// name, by JSON Pointer.
type Source struct {
	data []byte
	// values holds each value's first byte; names each member name's
	// opening quote. A repeated member keeps its last occurrence, as
	// decoding does.
	values map[string]int
	names  map[string]int
}

// SyntaxError is JSON text that does not parse, at a 1-based line and
// column (columns count characters).
type SyntaxError struct {
	Offset       int
	Line, Column int
	Msg          string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// Scan indexes data. Text that is not one JSON value is a *SyntaxError.
func Scan(data []byte) (*Source, error) {
	s := &Source{data: data, values: map[string]int{}, names: map[string]int{}}
	sc := scanner{src: s}
	sc.space()
	if err := sc.value("", 0); err != nil {
		return nil, err
	}
	sc.space()
	if sc.pos < len(data) {
		return nil, sc.fail("invalid character " + sc.quoteAt() + " after the top-level value")
	}
	return s, nil
}

// Position returns the line and column of path: of its member name when
// path is a member, else of its value. A path the text lacks takes the
// position of its longest present prefix, with found false.
func (s *Source) Position(path string) (line, column int, found bool) {
	p := path
	for {
		if off, ok := s.names[p]; ok {
			line, column = s.lineColumn(off)
			return line, column, p == path
		}
		if off, ok := s.values[p]; ok {
			line, column = s.lineColumn(off)
			return line, column, p == path
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return 0, 0, false
		}
		p = p[:i]
	}
}

// Has reports whether the text holds a value at path.
func (s *Source) Has(path string) bool {
	_, ok := s.values[path]
	return ok
}

func (s *Source) lineColumn(off int) (line, column int) {
	line, start := 1, 0
	for i := 0; i < off && i < len(s.data); i++ {
		if s.data[i] == '\n' {
			line, start = line+1, i+1
		}
	}
	return line, utf8.RuneCount(s.data[start:min(off, len(s.data))]) + 1
}

type scanner struct {
	src *Source
	pos int
}

func (sc *scanner) fail(msg string) *SyntaxError {
	line, col := sc.src.lineColumn(sc.pos)
	return &SyntaxError{Offset: sc.pos, Line: line, Column: col, Msg: msg}
}

func (sc *scanner) quoteAt() string {
	r, _ := utf8.DecodeRune(sc.src.data[sc.pos:])
	return fmt.Sprintf("%q", r)
}

func (sc *scanner) space() {
	for sc.pos < len(sc.src.data) {
		switch sc.src.data[sc.pos] {
		case ' ', '\t', '\n', '\r':
			sc.pos++
		default:
			return
		}
	}
}

func (sc *scanner) value(path string, depth int) error {
	if depth > maxDepth {
		return sc.fail("nesting too deep")
	}
	data := sc.src.data
	if sc.pos >= len(data) {
		return sc.fail("unexpected end of JSON input")
	}
	sc.src.values[path] = sc.pos
	switch data[sc.pos] {
	case '{':
		return sc.object(path, depth)
	case '[':
		return sc.array(path, depth)
	case '"':
		_, err := sc.str()
		return err
	default:
		return sc.scalar()
	}
}

func (sc *scanner) object(path string, depth int) error {
	sc.pos++
	sc.space()
	if sc.pos < len(sc.src.data) && sc.src.data[sc.pos] == '}' {
		sc.pos++
		return nil
	}
	for {
		sc.space()
		if sc.pos >= len(sc.src.data) || sc.src.data[sc.pos] != '"' {
			return sc.expected("a member name in double quotes")
		}
		at := sc.pos
		name, err := sc.str()
		if err != nil {
			return err
		}
		member := path + "/" + value.EncodePointerSegment(name)
		sc.src.names[member] = at
		sc.space()
		if sc.pos >= len(sc.src.data) || sc.src.data[sc.pos] != ':' {
			return sc.expected("':' after member name " + fmt.Sprintf("%q", name))
		}
		sc.pos++
		sc.space()
		if err := sc.value(member, depth+1); err != nil {
			return err
		}
		sc.space()
		if done, err := sc.next('}', "',' or '}' after a member"); done || err != nil {
			return err
		}
	}
}

func (sc *scanner) array(path string, depth int) error {
	sc.pos++
	sc.space()
	if sc.pos < len(sc.src.data) && sc.src.data[sc.pos] == ']' {
		sc.pos++
		return nil
	}
	for i := 0; ; i++ {
		sc.space()
		if err := sc.value(fmt.Sprintf("%s/%d", path, i), depth+1); err != nil {
			return err
		}
		sc.space()
		if done, err := sc.next(']', "',' or ']' after an element"); done || err != nil {
			return err
		}
	}
}

// next consumes ',' (false) or the closing byte (true).
func (sc *scanner) next(closing byte, want string) (bool, error) {
	if sc.pos >= len(sc.src.data) {
		return false, sc.fail("unexpected end of JSON input: expected " + want)
	}
	switch sc.src.data[sc.pos] {
	case ',':
		sc.pos++
		return false, nil
	case closing:
		sc.pos++
		return true, nil
	}
	return false, sc.expected(want)
}

func (sc *scanner) expected(want string) error {
	if sc.pos >= len(sc.src.data) {
		return sc.fail("unexpected end of JSON input: expected " + want)
	}
	return sc.fail("invalid character " + sc.quoteAt() + ": expected " + want)
}

// str reads one string token and returns its decoded text.
func (sc *scanner) str() (string, error) {
	data := sc.src.data
	start := sc.pos
	for i := start + 1; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			var s string
			if err := json.Unmarshal(data[start:i+1], &s); err != nil {
				return "", sc.fail("invalid string: " + err.Error())
			}
			sc.pos = i + 1
			return s, nil
		default:
			if data[i] < 0x20 {
				sc.pos = i
				return "", sc.fail("invalid control character in a string")
			}
		}
	}
	sc.pos = len(data)
	return "", sc.fail("unexpected end of JSON input: unterminated string")
}

// scalar reads a number or literal, checked by encoding/json (syntax
// only: a number too large for a float64 is still JSON).
func (sc *scanner) scalar() error {
	data := sc.src.data
	start := sc.pos
	end := start
	for end < len(data) && strings.IndexByte(" \t\r\n,]}:", data[end]) < 0 {
		end++
	}
	if end == start {
		return sc.fail("invalid character " + sc.quoteAt() + " looking for a value")
	}
	if !json.Valid(data[start:end]) {
		token := []rune(string(data[start:end]))
		if len(token) > 20 {
			token = append(token[:20], '…')
		}
		return sc.fail(fmt.Sprintf("invalid value %q", string(token)))
	}
	sc.pos = end
	return nil
}
