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
