package query

import (
	"errors"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// regexCache compiles I-Regexp patterns once per call site; a compiled
// query is shared between goroutines, so the cache is locked and bounded.
type regexCache struct {
	full bool
	mu   sync.Mutex
	res  map[string]*regexp.Regexp
}

func newRegexCache(full bool) *regexCache {
	return &regexCache{full: full, res: map[string]*regexp.Regexp{}}
}

func (c *regexCache) get(p string) *regexp.Regexp {
	c.mu.Lock()
	defer c.mu.Unlock()
	if re, ok := c.res[p]; ok {
		return re
	}
	re := compileIRegexp(p, c.full)
	if len(c.res) >= 64 {
		clear(c.res)
	}
	c.res[p] = re
	return re
}

// compileIRegexp validates an RFC 9485 I-Regexp and translates it to Go
// syntax: '.' excludes CR and LF, unescaped '^' and '$' stay anchors (as
// in the reference and RFC 9485 §5.3), and only the I-Regexp escapes
// exist. nil means the pattern is not valid.
func compileIRegexp(p string, full bool) *regexp.Regexp {
	re, err := translateIRegexp(p, full, false)
	var serr *syntax.Error
	if errors.As(err, &serr) && serr.Code == syntax.ErrInvalidRepeatSize {
		// repetitions nested past Go's 1000 copies, which ECMAScript
		// takes: written again with the outer ones unrolled
		re, err = translateIRegexp(p, full, true)
	}
	if err != nil {
		return nil
	}
	return re
}

// errNotIRegexp is a pattern the I-Regexp grammar refuses.
var errNotIRegexp = errors.New("not an I-Regexp")

func translateIRegexp(p string, full, unroll bool) (*regexp.Regexp, error) {
	t := iregexp{src: p, unroll: unroll}
	var b strings.Builder
	if full {
		b.WriteString(`\A(?:`)
	}
	if !t.alternation(&b, 0) || t.pos != len(t.src) {
		return nil, errNotIRegexp
	}
	if full {
		b.WriteString(`)\z`)
	}
	return regexp.Compile(b.String())
}

type iregexp struct {
	src string
	pos int
	// unroll writes a counted repetition of a group holding counted
	// repetitions as copies one after the other, since Go refuses
	// nested counts whose product passes 1000
	unroll bool
	// counted is how many counted repetitions were read: an atom holds
	// one when it grew while the atom was read (the Go text cannot say,
	// as '{' is also in \{, [{] and \p{L})
	counted int
}

func (t *iregexp) peek() byte {
	if t.pos < len(t.src) {
		return t.src[t.pos]
	}
	return 0
}

func (t *iregexp) alternation(b *strings.Builder, depth int) bool {
	if depth > 100 {
		return false
	}
	for {
		for t.pos < len(t.src) && t.peek() != '|' && t.peek() != ')' {
			if !t.piece(b, depth) {
				return false
			}
		}
		if t.peek() != '|' {
			return true
		}
		t.pos++
		b.WriteByte('|')
	}
}

func (t *iregexp) piece(b *strings.Builder, depth int) bool {
	atom, counted := b.Len(), t.counted
	c := t.peek()
	switch c {
	case '(':
		t.pos++
		b.WriteString("(?:")
		if !t.alternation(b, depth+1) || t.peek() != ')' {
			return false
		}
		t.pos++
		b.WriteByte(')')
	case '.':
		t.pos++
		b.WriteString(`[^\n\r]`)
	case '[':
		if !t.class(b) {
			return false
		}
	case '\\':
		if !t.escape(b, false) {
			return false
		}
	case '*', '+', '?', '{', '}', ']', ')', '|':
		return false
	case '^', '$':
		// anchors, as the RFC's own ECMAScript/RE2 conversions leave them;
		// an anchor has nothing to repeat, which the reference's
		// ECMAScript refuses ('^*', '$+', '^{1,3}')
		t.pos++
		b.WriteByte(c)
		switch t.peek() {
		case '*', '+', '?', '{':
			return false
		}
		return true
	default:
		r, n := utf8.DecodeRuneInString(t.src[t.pos:])
		if r == utf8.RuneError && n <= 1 {
			return false
		}
		t.pos += n
		b.WriteString(regexp.QuoteMeta(string(r)))
	}
	return t.quantifier(b, atom, t.counted > counted)
}

// quantifier reads a piece's quantifier, the piece's atom written to b
// from atom on; nested says whether the atom holds a counted repetition.
func (t *iregexp) quantifier(b *strings.Builder, atom int, nested bool) bool {
	switch c := t.peek(); c {
	case '*', '+', '?':
		t.pos++
		b.WriteByte(c)
	case '{':
		t.pos++
		lo, ok := t.count()
		if !ok {
			return false
		}
		hi := lo
		if t.peek() == ',' {
			t.pos++
			hi = -1
			if t.peek() != '}' {
				if hi, ok = t.count(); !ok {
					return false
				}
			}
		}
		if t.peek() != '}' {
			return false
		}
		t.pos++
		t.counted++
		return repeat(b, atom, lo, hi, t.unroll && nested)
	}
	return true
}

// count reads a repeat count.
func (t *iregexp) count() (int, bool) {
	s := t.pos
	if !t.digits() {
		return 0, false
	}
	n, err := strconv.Atoi(t.src[s:t.pos])
	if err != nil || n > maxRepeat {
		n = maxRepeat + 1 // refused by repeat
	}
	return n, true
}

// maxRepeat is the largest repeat count jetflow takes; the reference's
// ECMAScript takes larger ones.
const maxRepeat = 100_000

// maxWritten bounds the Go pattern a repetition is written out to: past
// it the pattern is refused, not compiled.
const maxWritten = 1 << 20

// repeat writes the atom written to b from atom on, repeated lo to hi
// times (hi -1: no upper bound), in Go syntax. ECMAScript takes repeat
// counts past 1000, Go does not, in one repetition or in repetitions
// nested: a larger count is written as repetitions of at most 1000 one
// after the other. A count past maxRepeat, or lo past hi, is refused.
// With unroll (a group holding a counted repetition, on the pass that
// unrolls them) the atom is written as copies instead.
func repeat(b *strings.Builder, atom, lo, hi int, unroll bool) bool {
	if lo > maxRepeat || hi > maxRepeat || hi >= 0 && lo > hi {
		return false
	}
	if unroll {
		return unrolled(b, atom, lo, hi)
	}
	if lo <= 1000 && hi <= 1000 {
		switch {
		case hi < 0:
			b.WriteString("{" + strconv.Itoa(lo) + ",}")
		case lo == hi:
			b.WriteString("{" + strconv.Itoa(lo) + "}")
		default:
			b.WriteString("{" + strconv.Itoa(lo) + "," + strconv.Itoa(hi) + "}")
		}
		return true
	}
	a, ok := cutAtom(b, atom, max(lo, hi)/1000+2)
	if !ok {
		return false
	}
	// lo times exactly, then up to hi-lo more (or any number more)
	for n := lo; n > 0; n -= 1000 {
		b.WriteString(a + "{" + strconv.Itoa(min(n, 1000)) + "}")
	}
	if hi < 0 {
		b.WriteString(a + "*")
		return true
	}
	for n := hi - lo; n > 0; n -= 1000 {
		b.WriteString(a + "{0," + strconv.Itoa(min(n, 1000)) + "}")
	}
	return true
}

// unrolled writes the atom written to b from atom on lo times, then hi-lo
// times optional (any number of times when hi is -1).
func unrolled(b *strings.Builder, atom, lo, hi int) bool {
	a, ok := cutAtom(b, atom, max(lo, hi, 1))
	if !ok {
		return false
	}
	for range lo {
		b.WriteString(a)
	}
	if hi < 0 {
		b.WriteString(a + "*")
		return true
	}
	for range hi - lo {
		b.WriteString(a + "?")
	}
	return true
}

// cutAtom takes the atom written to b from atom on out of b and returns
// it as a group to be written n times; false when n copies would pass
// maxWritten.
func cutAtom(b *strings.Builder, atom, n int) (string, bool) {
	a := "(?:" + b.String()[atom:] + ")"
	if len(a)*n > maxWritten {
		return "", false
	}
	head := b.String()[:atom]
	b.Reset()
	b.WriteString(head)
	return a, true
}

func (t *iregexp) digits() bool {
	s := t.pos
	for t.pos < len(t.src) && t.src[t.pos] >= '0' && t.src[t.pos] <= '9' {
		t.pos++
	}
	return t.pos > s
}

// escape handles SingleCharEsc and \p{..}/\P{..}.
func (t *iregexp) escape(b *strings.Builder, inClass bool) bool {
	t.pos++
	c := t.peek()
	t.pos++
	switch c {
	case '(', ')', '*', '+', '-', '.', '?', '[', '\\', ']', '^', '{', '|', '}':
		b.WriteByte('\\')
		b.WriteByte(c)
	case 'n':
		b.WriteString(`\n`)
	case 'r':
		b.WriteString(`\r`)
	case 't':
		b.WriteString(`\t`)
	case 'p', 'P':
		if t.peek() != '{' {
			return false
		}
		end := strings.IndexByte(t.src[t.pos:], '}')
		if end < 0 {
			return false
		}
		prop := t.src[t.pos+1 : t.pos+end]
		if !validCategory(prop) {
			return false
		}
		t.pos += end + 1
		b.WriteByte('\\')
		b.WriteByte(c)
		b.WriteString("{" + prop + "}")
	default:
		return false
	}
	_ = inClass
	return true
}

func validCategory(p string) bool {
	switch p {
	case "L", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me", "Mn", "N", "Nd", "Nl", "No",
		"P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "Z", "Zl", "Zp", "Zs",
		"S", "Sc", "Sk", "Sm", "So", "C", "Cc", "Cf", "Cn", "Co":
		// Cn (unassigned, in Go's tables since Go 1.25) as of
		// unicode.Version, which may lag the reference's
		return true
	}
	return false
}

// class handles a bracket expression.
func (t *iregexp) class(b *strings.Builder) bool {
	t.pos++
	b.WriteByte('[')
	if t.peek() == '^' {
		t.pos++
		b.WriteByte('^')
	}
	first := true
	for {
		c := t.peek()
		if t.pos >= len(t.src) {
			return false
		}
		if c == ']' && !first {
			t.pos++
			b.WriteByte(']')
			return true
		}
		if c == '-' && (first || (t.pos+1 < len(t.src) && t.src[t.pos+1] == ']')) {
			t.pos++
			b.WriteString(`\-`)
			first = false
			continue
		}
		first = false
		if c == '\\' && t.pos+1 < len(t.src) && (t.src[t.pos+1] == 'p' || t.src[t.pos+1] == 'P') {
			if !t.escape(b, true) {
				return false
			}
			continue
		}
		if !t.classChar(b) {
			return false
		}
		if t.peek() == '-' && t.pos+1 < len(t.src) && t.src[t.pos+1] != ']' {
			t.pos++
			b.WriteByte('-')
			if !t.classChar(b) {
				return false
			}
		}
	}
}

func (t *iregexp) classChar(b *strings.Builder) bool {
	c := t.peek()
	switch c {
	case '\\':
		if t.pos+1 < len(t.src) && (t.src[t.pos+1] == 'p' || t.src[t.pos+1] == 'P') {
			return false
		}
		return t.escape(b, true)
	case '[', ']', '-':
		return false
	}
	r, n := utf8.DecodeRuneInString(t.src[t.pos:])
	if r == utf8.RuneError && n <= 1 {
		return false
	}
	t.pos += n
	b.WriteString(regexp.QuoteMeta(string(r)))
	return true
}
