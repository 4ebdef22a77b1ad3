package workflow

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
)

// FuzzLower feeds arbitrary text through LowerJSON, seeded with the
// conformance documents. Lowering never panics, fails only with a coded
// error, and a successful lowering is canonical JSON that relowering its
// own document reproduces.
func FuzzLower(f *testing.F) {
	for _, p := range loadCorpus(f) {
		f.Add([]byte(p.c.Doc))
	}
	f.Add([]byte(example))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := LowerJSON(data)
		if err != nil {
			var fe *fault.Error
			if !errors.As(err, &fe) || !fe.HasPath {
				t.Fatalf("uncoded or unlocated error %v", err)
			}
			return
		}
		text := l.Canonical()
		if !json.Valid([]byte(text)) {
			t.Fatalf("lowering is not JSON: %s", text)
		}
		again, err := Lower(l.Document)
		if err != nil {
			t.Fatalf("relowering failed: %v", err)
		}
		if again.Canonical() != text {
			t.Fatal("relowering differs")
		}
		for _, id := range l.States {
			if l.Specs[id] == nil || l.Sources[id] != id {
				t.Fatalf("state %s lacks its spec or source", id)
			}
		}
	})
}
