package payload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// A document kept with its large values by reference (a run record, which
// holds a run's input, results and the invocations it owes) has each JSON
// value larger than the threshold replaced by a reference object:
//
//	{"$jetflow.payload":{"name":"<run>/value/<sha256 hex>","size":N,"digest":"SHA-256=…"}}
//
// The value's bytes are the object, unchanged, so Join gives back the
// document Split was given, byte for byte. Names follow content: a value
// saved again uploads nothing, two copies of one value in a document share
// an object, and every object of a run starts with "<run>/".
//
// A value of the document that is itself an object beginning with the
// reference's member is kept by reference too, whatever its size, so no
// value can be mistaken for a reference. The member cannot occur inside a
// JSON string (its quotes would be escaped), so every occurrence of it in a
// split document is a reference.
var refMarker = []byte(`{"$jetflow.payload":`)

// KindValue is the kind of a large value of a run record.
const KindValue = "value"

// Value is one large value Split took out of a document, and its place.
type Value struct {
	Ref  Ref
	Body []byte
}

// refJSON is a reference object's member.
type refJSON struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	Digest string `json:"digest"`
}

// HasRefs reports whether doc holds references (a fast scan, no
// allocation).
func HasRefs(doc []byte) bool { return bytes.Contains(doc, refMarker) }

// Split returns doc with each JSON value larger than threshold bytes
// replaced by a reference named after runID and the value's digest, and
// the values it replaced (each distinct value once). A document that is
// at most threshold bytes and holds no reference member is returned as it
// is, without allocating. A container larger than the threshold is split
// into its members first, and replaced whole only when what remains of it
// is still larger. doc must be valid JSON.
func Split(doc []byte, runID string, threshold int) ([]byte, []Value, error) {
	if len(doc) <= threshold && !HasRefs(doc) {
		return doc, nil, nil
	}
	s := splitter{d: doc, run: runID, threshold: threshold, out: make([]byte, 0, 4096), seen: map[string]bool{}}
	end, err := s.value(0)
	if err != nil {
		return nil, nil, err
	}
	s.out = append(s.out, doc[end:]...)
	return s.out, s.vals, nil
}

type splitter struct {
	d         []byte
	run       string
	threshold int
	out       []byte
	vals      []Value
	seen      map[string]bool
}

// value copies the value at i (after any whitespace) to out, by reference
// where it must, and returns where it ends.
func (s *splitter) value(i int) (int, error) {
	start := skipWS(s.d, i)
	s.out = append(s.out, s.d[i:start]...)
	end, err := skipValue(s.d, start, 0)
	if err != nil {
		return 0, err
	}
	v := s.d[start:end]
	big := len(v) > s.threshold
	if !big && !HasRefs(v) {
		s.out = append(s.out, v...)
		return end, nil
	}
	if bytes.HasPrefix(v, refMarker) || (big && v[0] != '{' && v[0] != '[') {
		s.ref(v)
		return end, nil
	}
	// A container: split its members, then judge what remains. The
	// bytes between members (keys, separators, any space) are copied.
	mark, nvals := len(s.out), len(s.vals)
	obj := v[0] == '{'
	pos := start + 1
	s.out = append(s.out, v[0])
	for {
		j := skipWS(s.d, pos)
		if c := s.d[j]; c == '}' || c == ']' {
			s.out = append(s.out, s.d[pos:j+1]...)
			break
		}
		if obj {
			k, err := skipValue(s.d, j, 0)
			if err != nil {
				return 0, err
			}
			j = skipWS(s.d, skipWS(s.d, k)+1) // past the colon
		}
		s.out = append(s.out, s.d[pos:j]...)
		vend, err := s.value(j)
		if err != nil {
			return 0, err
		}
		k := skipWS(s.d, vend)
		if s.d[k] == ',' {
			k++
		}
		s.out = append(s.out, s.d[vend:k]...)
		pos = k
	}
	if len(s.out)-mark > s.threshold {
		for _, v := range s.vals[nvals:] {
			delete(s.seen, v.Ref.Name)
		}
		s.out, s.vals = s.out[:mark], s.vals[:nvals]
		s.ref(v)
	}
	return end, nil
}

// ref writes the reference to v and notes v.
func (s *splitter) ref(v []byte) {
	sum := sha256.Sum256(v)
	r := Ref{Name: Name(s.run, KindValue, hex.EncodeToString(sum[:])), Size: int64(len(v)), Digest: Digest(v)}
	s.out = AppendRef(s.out, r)
	if !s.seen[r.Name] {
		s.seen[r.Name] = true
		s.vals = append(s.vals, Value{Ref: r, Body: v})
	}
}

// AppendRef appends the reference object of r.
func AppendRef(b []byte, r Ref) []byte {
	b = append(b, refMarker...)
	b = append(b, `{"name":`...)
	b = strconv.AppendQuote(b, r.Name)
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, r.Size, 10)
	b = append(b, `,"digest":`...)
	b = strconv.AppendQuote(b, r.Digest)
	return append(b, "}}"...)
}

// Refs returns the references doc holds, in order.
func Refs(doc []byte) ([]Ref, error) {
	var out []Ref
	err := walkRefs(doc, func(_, _ int, r Ref) error { out = append(out, r); return nil })
	return out, err
}

// Join returns doc with each reference replaced by the value resolve
// returns for it: the document Split was given. A document without
// references is returned as it is, without allocating.
func Join(doc []byte, resolve func(Ref) ([]byte, error)) ([]byte, error) {
	if !HasRefs(doc) {
		return doc, nil
	}
	var parts [][]byte
	n, last := 0, 0
	err := walkRefs(doc, func(start, end int, r Ref) error {
		v, err := resolve(r)
		if err != nil {
			return err
		}
		if int64(len(v)) != r.Size {
			return fmt.Errorf("%w: object %q has %d bytes, the reference names %d", ErrDigest, r.Name, len(v), r.Size)
		}
		parts = append(parts, doc[last:start], v)
		n += start - last + len(v)
		last = end
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, n+len(doc)-last)
	for _, p := range parts {
		out = append(out, p...)
	}
	return append(out, doc[last:]...), nil
}

// walkRefs calls f with the bounds and content of each reference of doc.
func walkRefs(doc []byte, f func(start, end int, r Ref) error) error {
	for i := 0; ; {
		k := bytes.Index(doc[i:], refMarker)
		if k < 0 {
			return nil
		}
		start := i + k
		end, err := skipValue(doc, start, 0)
		if err != nil {
			return fmt.Errorf("%w: unreadable reference at byte %d: %w", ErrBadRef, start, err)
		}
		var obj map[string]refJSON
		if err := json.Unmarshal(doc[start:end], &obj); err != nil || len(obj) != 1 {
			return fmt.Errorf("%w: unreadable reference at byte %d: %.200s", ErrBadRef, start, doc[start:end])
		}
		r := Ref(obj["$jetflow.payload"])
		if r.Name == "" || r.Size < 0 {
			return fmt.Errorf("%w: reference at byte %d names no object: %.200s", ErrBadRef, start, doc[start:end])
		}
		if err := f(start, end, r); err != nil {
			return err
		}
		i = end
	}
}

var errSyntax = errors.New("invalid JSON")

func skipWS(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns where the JSON value at i ends.
func skipValue(d []byte, i, depth int) (int, error) {
	if depth > 10000 {
		return 0, errSyntax
	}
	i = skipWS(d, i)
	if i >= len(d) {
		return 0, errSyntax
	}
	switch d[i] {
	case '"':
		for j := i + 1; j < len(d); j++ {
			switch d[j] {
			case '\\':
				j++
			case '"':
				return j + 1, nil
			}
		}
		return 0, errSyntax
	case '{', '[':
		closer := byte('}')
		if d[i] == '[' {
			closer = ']'
		}
		j := skipWS(d, i+1)
		if j < len(d) && d[j] == closer {
			return j + 1, nil
		}
		for {
			var err error
			if closer == '}' {
				if j, err = skipValue(d, j, depth+1); err != nil {
					return 0, err
				}
				j = skipWS(d, j)
				if j >= len(d) || d[j] != ':' {
					return 0, errSyntax
				}
				j++
			}
			if j, err = skipValue(d, j, depth+1); err != nil {
				return 0, err
			}
			j = skipWS(d, j)
			if j >= len(d) {
				return 0, errSyntax
			}
			if d[j] == closer {
				return j + 1, nil
			}
			if d[j] != ',' {
				return 0, errSyntax
			}
			j++
		}
	default:
		j := i
		for j < len(d) && bytes.IndexByte([]byte("-+.0123456789eEtruefalsn"), d[j]) >= 0 {
			j++
		}
		if j == i {
			return 0, errSyntax
		}
		return j, nil
	}
}
