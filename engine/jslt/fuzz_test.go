package jslt_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/jslt"
	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
)

// FuzzStylesheet compiles arbitrary stylesheets and applies them to
// arbitrary inputs under a tight budget: neither may panic, and every
// failure is a coded error. Seeded from the table tests and from every
// stylesheet of the conformance corpus.
func FuzzStylesheet(f *testing.F) {
	for _, c := range transformCases {
		f.Add(c.sheet, c.input)
	}
	for _, s := range corpusStylesheets(f) {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, sheet, input string) {
		doc, err := value.Decode([]byte(sheet), value.Limits{})
		if err != nil {
			return
		}
		s, err := jslt.Compile(doc)
		if err != nil {
			if fault.CodeOf(err) == "" {
				t.Fatalf("uncoded compile error %v", err)
			}
			return
		}
		in, err := value.Decode([]byte(input), value.Limits{})
		if err != nil {
			in = nil
		}
		_, _, err = s.Transform(&query.Budget{Steps: 20000, Bytes: 1 << 20}, in, nil)
		var fe *fault.Error
		if err != nil && !errors.As(err, &fe) {
			t.Fatalf("uncoded runtime error %v", err)
		}
	})
}

// corpusStylesheets returns each jslt node's stylesheet and its case's
// input from the DAG corpus, as JSON text.
func corpusStylesheets(f *testing.F) [][2]string {
	data, err := os.ReadFile(filepath.Join("..", "..", "conformance", "cases", "dag", "jslt.json"))
	if err != nil {
		f.Fatal(err)
	}
	var cases []struct {
		Doc struct {
			Nodes map[string]map[string]any `json:"nodes"`
		} `json:"doc"`
		Input any `json:"input"`
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		f.Fatal(err)
	}
	var out [][2]string
	for _, c := range cases {
		in, _ := json.Marshal(c.Input)
		for _, id := range value.Keys(anyMap(c.Doc.Nodes)) {
			if ss, ok := c.Doc.Nodes[id]["stylesheet"]; ok {
				doc, _ := json.Marshal(ss)
				out = append(out, [2]string{string(doc), string(in)})
			}
		}
	}
	return out
}

func anyMap(m map[string]map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
