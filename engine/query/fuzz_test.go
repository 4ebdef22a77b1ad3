package query

import (
	"encoding/json"
	"testing"

	"github.com/jetflow/jetflow/engine/value"
)

func seedCorpus(f *testing.F, withData bool) {
	files := loadCorpus(f)
	for _, file := range files {
		for _, c := range file.cases {
			doc, err := json.Marshal(c.Doc)
			if err != nil {
				continue
			}
			data, _ := json.Marshal(c.Data)
			if withData {
				f.Add(string(doc), string(data))
			} else {
				f.Add(string(doc), "")
			}
		}
	}
}

// FuzzCompile compiles arbitrary documents: errors are fine, panics are not.
func FuzzCompile(f *testing.F) {
	seedCorpus(f, false)
	f.Fuzz(func(t *testing.T, doc, _ string) {
		v, err := value.Decode([]byte(doc), value.Limits{})
		if err != nil {
			return
		}
		_, _ = Compile(v, Options{})
	})
}

// FuzzEval compiles and evaluates arbitrary documents on arbitrary data
// under tight limits; neither may panic.
func FuzzEval(f *testing.F) {
	seedCorpus(f, true)
	f.Fuzz(func(t *testing.T, doc, data string) {
		d, err := value.Decode([]byte(doc), value.Limits{})
		if err != nil {
			return
		}
		in, err := value.Decode([]byte(data), value.Limits{})
		if err != nil {
			in = nil
		}
		q, err := Compile(d, Options{Limits: Limits{Steps: 20000, SequenceItems: 10000, Bytes: 1 << 20}})
		if err != nil {
			return
		}
		ext := map[string]any{"x": 1.0}
		plain, okP, errP := q.Eval(in, ext)
		// keeping the order of built objects changes no data: an ordered
		// evaluation (a task's with, a DAG node's value) made plain is
		// the plain evaluation
		ordered, okO, errO := q.Within(nil).EvalOrdered(in, ext)
		if (errP == nil) != (errO == nil) || okP != okO {
			t.Fatalf("ordered evaluation (%v, %v) disagrees with plain (%v, %v)", okO, errO, okP, errP)
		}
		if _, err := value.Canonical(plain); errP == nil && err == nil && !value.Equal(plain, value.Plain(ordered)) {
			t.Fatalf("ordered evaluation made plain differs: %v, want %v", value.Plain(ordered), plain)
		}
		// the empty marker never leaves Eval or Items; EvalMarked keeps
		// it, and unmarked its answer is EvalOrdered's
		if errP == nil && holdsMarker(plain) {
			t.Fatalf("Eval's answer holds the empty marker: %v", plain)
		}
		if items, err := q.Items(in, ext); err == nil && holdsMarker(items) {
			t.Fatalf("Items holds the empty marker: %v", items)
		}
		marked, okM, _, errM := q.Within(nil).EvalMarked(in, ext)
		if (errM == nil) != (errO == nil) || okM != okO {
			t.Fatalf("marked evaluation (%v, %v) disagrees with ordered (%v, %v)", okM, errM, okO, errO)
		}
		if _, err := value.Canonical(plain); errP == nil && err == nil && !value.Equal(value.Plain(Unmark(marked)), value.Plain(ordered)) {
			t.Fatalf("marked evaluation unmarked differs: %v, want %v", Unmark(marked), ordered)
		}
		_, _ = q.EBV(in, nil)
		// A budget shared by two evaluations: one that succeeds spent
		// no more than it allowed.
		b := Budget{Steps: 30000, Bytes: 1 << 20}
		for range 2 {
			_, err := q.Within(&b).EBV(in, nil)
			if steps, bytes := b.Spent(); err == nil && (steps > b.Steps || bytes > b.Bytes) {
				t.Fatalf("an evaluation succeeded having spent %d steps and %d bytes of a budget of %d and %d", steps, bytes, b.Steps, b.Bytes)
			}
		}
	})
}

// holdsMarker reports whether v is or holds the empty marker.
func holdsMarker(v any) bool {
	switch x := v.(type) {
	case value.Empty:
		return true
	case []any:
		for _, e := range x {
			if holdsMarker(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if holdsMarker(e) {
				return true
			}
		}
	case *value.Object:
		for i := range x.Len() {
			if _, e := x.At(i); holdsMarker(e) {
				return true
			}
		}
	}
	return false
}
