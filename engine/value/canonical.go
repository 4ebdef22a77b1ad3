package value

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// Canonical returns the RFC 8785 text of v. Numbers use ECMAScript's
// Number::toString (through jcs.NumberToJSON), members are sorted by
// UTF-16 code units, strings use JSON.stringify's escapes.
func Canonical(v any) (string, error) {
	var b strings.Builder
	if err := writeJSON(&b, v, "", true); err != nil {
		return "", err
	}
	return b.String(), nil
}

// JSText returns the JSON text of v as JSON.stringify writes an object the
// reference parsed from canonical JSON: members in JavaScript's own-key
// order (array-index keys ascending by number, then UTF-16 order; see
// Keys), numbers and strings as Canonical writes them. It is the text a
// task handler of the reference sees in its input, so "9" comes before
// "10" where canonical JSON puts "10" first. Non-finite numbers are
// refused, as Canonical refuses them.
func JSText(v any) (string, error) {
	var b strings.Builder
	if err := writeJSON(&b, v, "", false); err != nil {
		return "", err
	}
	return b.String(), nil
}

// MustCanonical is Canonical for values the engine built itself.
func MustCanonical(v any) string {
	s, err := Canonical(v)
	if err != nil {
		panic(err)
	}
	return s
}

// writeJSON writes v with each object's members sorted by UTF-16 code
// units when canonical, else in JavaScript's own order (Keys order for a
// map, an Object's own order).
func writeJSON(b *strings.Builder, v any, path string, canonical bool) error {
	sortKeys := SortKeys
	if canonical {
		sortKeys = sortUTF16
	}
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if t {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case float64:
		return writeNumber(b, t, path)
	case int:
		return writeNumber(b, float64(t), path)
	case string:
		WriteString(b, t)
	case []any:
		b.WriteByte('[')
		for i, x := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, x, path+"/"+strconv.Itoa(i), canonical); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sortKeys(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			WriteString(b, k)
			b.WriteByte(':')
			if err := writeJSON(b, t[k], path+"/"+EncodePointerSegment(k), canonical); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case *Object:
		// JSText keeps the object's own order; Canonical sorts
		keys := t.names
		if canonical {
			keys = append([]string(nil), keys...)
			sortKeys(keys)
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			x := t.vals[i]
			if canonical { // keys is a sorted copy: look the member up
				x, _ = t.Get(k)
			}
			WriteString(b, k)
			b.WriteByte(':')
			if err := writeJSON(b, x, path+"/"+EncodePointerSegment(k), canonical); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case Empty:
		// the reference's canonical text refuses its marker, a symbol
		return fmt.Errorf("a symbol is not a JSON value at %s", Place(path))
	default:
		return fmt.Errorf("a %T is not JSON data at %s", v, Place(path))
	}
	return nil
}

func writeNumber(b *strings.Builder, f float64, path string) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%s is not a JSON number at %s", jsNumberName(f), Place(path))
	}
	s, err := jcs.NumberToJSON(f)
	if err != nil {
		return err
	}
	b.WriteString(s)
	return nil
}

func jsNumberName(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case f > 0:
		return "Infinity"
	}
	return "-Infinity"
}

// Place names a JSON Pointer as the reference's canonicalizer does in its
// refusals: the pointer, or "the document root" for the empty one.
func Place(path string) string {
	if path == "" {
		return "the document root"
	}
	return path
}

// NumberString is JavaScript's String(n), NaN and Infinity included.
func NumberString(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return jsNumberName(f)
	}
	s, _ := jcs.NumberToJSON(f)
	return s
}

func sortUTF16(keys []string) {
	// Insertion sort is quick for the small objects workflows hold.
	if len(keys) > 16 {
		sortSlice(keys)
		return
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && CompareUTF16(keys[j-1], keys[j]) > 0; j-- {
			keys[j-1], keys[j] = keys[j], keys[j-1]
		}
	}
}

const hexDigits = "0123456789abcdef"

// WriteString writes s as JSON.stringify does: the short escapes, \u00XX
// for other control characters, everything else verbatim.
func WriteString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '"':
				b.WriteString(`\"`)
			case '\\':
				b.WriteString(`\\`)
			case '\b':
				b.WriteString(`\b`)
			case '\f':
				b.WriteString(`\f`)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			default:
				if c < 0x20 {
					b.WriteString(`\u00`)
					b.WriteByte(hexDigits[c>>4])
					b.WriteByte(hexDigits[c&0xF])
				} else {
					b.WriteByte(c)
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString(`\ufffd`)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}

// EncodePointerSegment escapes one RFC 6901 reference token.
func EncodePointerSegment(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// DecodePointerSegment reverses EncodePointerSegment.
func DecodePointerSegment(s string) string {
	if !strings.Contains(s, "~") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}
