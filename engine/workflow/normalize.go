package workflow

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jetflow/jetflow/engine/value"
)

// MaxDepth and MaxSize bound the documents Lower accepts. The reference
// has no explicit bound (it fails when its stack or heap runs out); ours
// refuse with JF0021 "workflow must be JSON" and a cause that names the
// limit, never with a stack overflow.
const (
	// MaxDepth is the deepest nesting of arrays and objects, the same bound
	// value.Decode applies by default.
	MaxDepth = 256
	// MaxSize is an upper bound on the canonical text of the document, in
	// bytes (estimated while copying).
	MaxSize = 16 << 20
)

// normalizer deep-copies a document the way JSON.parse(canonicalizeJson(x))
// would: only JSON data passes, numbers become float64 (-0 becomes 0), and
// the copy shares nothing with the caller's value.
type normalizer struct {
	size int
	// canonical walks members in the reference's canonical order
	// (sorted by UTF-16 code units, a name before its value), so that the
	// refusal met first is the one it reports, not Go's map order's.
	canonical bool
}

func normalizeDocument(doc any) (any, error) {
	var n normalizer
	v, err := n.copy(doc, 1)
	var e *notJSON
	if !errors.As(err, &e) {
		return v, err
	}
	// Walked again in canonical order only when something fails, so a
	// valid document pays no sort.
	// (Should that walk stop at the size bound first, the refusal of
	// the first walk stands.)
	n = normalizer{canonical: true}
	_, cerr := n.copy(doc, 1)
	errors.As(cerr, &e)
	return nil, e.finish()
}

// notJSON is a refusal whose location is assembled while the copy
// unwinds, so that a valid document pays nothing for paths.
type notJSON struct {
	format string // one %s, the location
	wrap   error
	rev    []string // path segments, innermost first
}

func (e *notJSON) finish() error {
	var b strings.Builder
	for i := len(e.rev) - 1; i >= 0; i-- {
		b.WriteByte('/')
		b.WriteString(e.rev[i])
	}
	loc := value.Place(b.String())
	if e.wrap != nil {
		return fmt.Errorf(e.format, e.wrap, loc)
	}
	return fmt.Errorf(e.format, loc)
}

func (e *notJSON) Error() string { return e.finish().Error() }

func refuse(format string) error { return &notJSON{format: format} }

func within(err error, segment string) error {
	var e *notJSON
	if errors.As(err, &e) {
		e.rev = append(e.rev, segment)
	}
	return err
}

func (n *normalizer) copy(v any, depth int) (any, error) {
	switch t := v.(type) {
	case nil:
		n.size += 4
		return nil, nil
	case bool:
		n.size += 5
		return t, nil
	case float64:
		return n.number(t)
	case int:
		return n.number(float64(t))
	case int64:
		return n.number(float64(t))
	case string:
		if !utf8.ValidString(t) {
			return nil, refuse("a string that is not valid UTF-8 is not JSON data at %s")
		}
		n.size += len(t) + 2
		return t, n.overSize()
	case []any:
		if depth > MaxDepth {
			return nil, &notJSON{format: "%w: deeper than " + strconv.Itoa(MaxDepth) + " at %s", wrap: value.ErrTooDeep}
		}
		out := make([]any, len(t))
		n.size += 2 + len(t)
		for i, x := range t {
			c, err := n.copy(x, depth+1)
			if err != nil {
				return nil, within(err, strconv.Itoa(i))
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		if depth > MaxDepth {
			return nil, &notJSON{format: "%w: deeper than " + strconv.Itoa(MaxDepth) + " at %s", wrap: value.ErrTooDeep}
		}
		out := make(map[string]any, len(t))
		n.size += 2 + len(t)
		keys := maps.Keys(t)
		if n.canonical {
			keys = slices.Values(slices.SortedFunc(keys, value.CompareUTF16))
		}
		for k := range keys {
			if !utf8.ValidString(k) {
				return nil, refuse("a member name that is not valid UTF-8 is not JSON data at %s")
			}
			n.size += len(k) + 3
			c, err := n.copy(t[k], depth+1)
			if err != nil {
				return nil, within(err, value.EncodePointerSegment(k))
			}
			out[k] = c
		}
		return out, nil
	}
	return nil, refuse(fmt.Sprintf("a %T is not JSON data at %%s", v))
}

func (n *normalizer) number(f float64) (any, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, refuse(value.NumberString(f) + " is not a JSON number at %s")
	}
	n.size += 8
	if f == 0 {
		f = 0 // -0 canonicalizes, and so parses back, as 0
	}
	return f, n.overSize()
}

func (n *normalizer) overSize() error {
	if n.size > MaxSize {
		return errTooLarge
	}
	return nil
}

var errTooLarge = fmt.Errorf("%w: more than %d bytes", value.ErrTooLarge, MaxSize)

// nonblank is the reference's test: a string that String.prototype.trim
// does not reduce to "".
func nonblank(v any) bool {
	s, ok := v.(string)
	return ok && !value.Blank(s)
}

// safeInteger is Number.isSafeInteger.
func safeInteger(v any) (int64, bool) {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53-1 {
		return 0, false
	}
	return int64(f), true
}

// finite is Number.isFinite (which, unlike the global isFinite, does not
// coerce).
func finite(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok && !math.IsNaN(f) && !math.IsInf(f, 0)
}

// jsString is JavaScript's String(v) for a JSON value; absent is undefined.
func jsString(v any, present bool) string {
	if !present {
		return "undefined"
	}
	var b strings.Builder
	writeJSString(&b, v, true)
	return b.String()
}

func writeJSString(b *strings.Builder, v any, top bool) {
	switch t := v.(type) {
	case nil:
		// Array.prototype.join writes null and undefined elements as "".
		if top {
			b.WriteString("null")
		}
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case float64:
		b.WriteString(value.NumberString(t))
	case string:
		b.WriteString(t)
	case []any:
		for i, x := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSString(b, x, false)
		}
	default:
		b.WriteString("[object Object]")
	}
}
