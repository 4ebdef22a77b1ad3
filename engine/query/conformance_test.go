package query

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// corpusCase is one case of conformance/cases/query.
type corpusCase struct {
	Name      string         `json:"name"`
	Doc       any            `json:"doc"`
	Data      any            `json:"data"`
	HasData   bool           `json:"-"`
	Externals map[string]any `json:"externals"`
	Limits    *Limits        `json:"limits"`
	Mode      string         `json:"mode"`
	// Written compiles the doc as written (member order kept), where the
	// generator hands the reference the doc unsorted.
	Written     bool `json:"written"`
	writtenKeys value.Written
}

// golden is the reference's outcome for a case.
type golden struct {
	Name      string   `json:"name"`
	Result    any      `json:"result"`
	Count     *int     `json:"count"`
	Empty     bool     `json:"empty"`
	EBV       *bool    `json:"ebv"`
	Items     []any    `json:"items"`
	Externals []string `json:"externals"`
	Error     *struct {
		Code    string `json:"code"`
		Path    string `json:"path"`
		Message string `json:"message"`
	} `json:"error"`
}

type corpusFile struct {
	name    string
	cases   []corpusCase
	goldens []golden
}

func loadCorpus(t testing.TB) []corpusFile {
	t.Helper()
	dir := filepath.Join("..", "..", "conformance", "cases", "query")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read corpus: %v", err)
	}
	var files []corpusFile
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var cases []corpusCase
		var shared struct {
			Data  any               `json:"data"`
			Cases []json.RawMessage `json:"cases"`
		}
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			if err := decodeAsJS(raw, &shared); err != nil {
				t.Fatalf("%s: %v", e.Name(), err)
			}
			list = shared.Cases
			shared.Data = jsNumbers(shared.Data)
		}
		for _, r := range list {
			var c corpusCase
			if err := decodeAsJS(r, &c); err != nil {
				t.Fatalf("%s: %v", e.Name(), err)
			}
			c.Doc, c.Data = jsNumbers(c.Doc), jsNumbers(c.Data)
			for k, v := range c.Externals {
				c.Externals[k] = jsNumbers(v)
			}
			if c.Written {
				var raw struct {
					Doc json.RawMessage `json:"doc"`
				}
				_ = json.Unmarshal(r, &raw)
				doc, w, err := value.DecodeWritten(raw.Doc, value.Limits{})
				if err != nil {
					t.Fatalf("%s / %s: %v", e.Name(), c.Name, err)
				}
				c.Doc, c.writtenKeys = doc, w
			}
			var probe map[string]json.RawMessage
			_ = json.Unmarshal(r, &probe)
			if _, ok := probe["data"]; !ok {
				c.Data = shared.Data
			}
			cases = append(cases, c)
		}
		graw, err := os.ReadFile(filepath.Join("..", "..", "conformance", "golden", "query", e.Name()))
		if err != nil {
			t.Fatalf("golden for %s: %v (run: cd conformance && node generate.mjs query)", e.Name(), err)
		}
		var goldens []golden
		if err := json.Unmarshal(graw, &goldens); err != nil {
			t.Fatal(err)
		}
		if len(goldens) != len(cases) {
			t.Fatalf("%s: %d cases but %d goldens; regenerate", e.Name(), len(cases), len(goldens))
		}
		files = append(files, corpusFile{e.Name(), cases, goldens})
	}
	return files
}

// decodeAsJS decodes a case as JSON.parse reads the generator's file: a
// number past float64's range (1e400) is ±Infinity, not an error; the
// numbers are json.Number until jsNumbers turns them into float64.
func decodeAsJS(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

// jsNumbers turns the json.Numbers decodeAsJS left into float64, as
// JavaScript's Number does: out of range is ±Infinity.
func jsNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil && !math.IsInf(f, 0) {
			panic(fmt.Sprintf("number %q: %v", x, err))
		}
		return f
	case []any:
		for i, e := range x {
			x[i] = jsNumbers(e)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = jsNumbers(e)
		}
	}
	return v
}

// decodeNumbers turns the generator's {"@number": "NaN"} back into floats.
func decodeNumbers(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = decodeNumbers(e)
		}
		return out
	case map[string]any:
		if s, ok := x["@number"].(string); ok && len(x) == 1 {
			switch s {
			case "NaN":
				return math.NaN()
			case "Infinity":
				return math.Inf(1)
			}
			return math.Inf(-1)
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = decodeNumbers(e)
		}
		return out
	}
	return v
}

// sameJSON is deep equality with NaN equal to itself (goldens spell it).
func sameJSON(a, b any) bool {
	if x, ok := a.(float64); ok {
		y, ok := b.(float64)
		return ok && (x == y || (x != x && y != y))
	}
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameJSON(v, w) {
				return false
			}
		}
		return true
	}
	return value.Equal(a, b)
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// runCase returns "" when the Go engine agrees with the golden.
func runCase(c corpusCase, g golden) string {
	opts := Options{Written: c.writtenKeys}
	if c.Limits != nil {
		opts.Limits = *c.Limits
	}
	q, err := Compile(c.Doc, opts)
	var got golden
	if err == nil {
		got.Externals = q.Externals()
		switch c.Mode {
		case "ebv":
			var b bool
			b, err = q.EBV(c.Data, c.Externals)
			got.EBV = &b
		case "items":
			got.Items, err = q.Items(c.Data, c.Externals)
		default:
			var ok bool
			got.Result, ok, err = q.Eval(c.Data, c.Externals)
			got.Empty = !ok
			if err == nil {
				items, ierr := q.Items(c.Data, c.Externals)
				if ierr != nil {
					return "Items failed after Eval succeeded: " + ierr.Error()
				}
				n := len(items)
				got.Count = &n
			}
		}
	}
	if g.Error != nil {
		var fe *fault.Error
		if !errors.As(err, &fe) {
			return fmt.Sprintf("want error %s at %q, got %v", g.Error.Code, g.Error.Path, describeOutcome(got, err))
		}
		if string(fe.Code) != g.Error.Code || fe.Path != g.Error.Path {
			return fmt.Sprintf("want error %s at %q, got %s at %q (%v)", g.Error.Code, g.Error.Path, fe.Code, fe.Path, err)
		}
		if fe.Error() != g.Error.Message {
			return fmt.Sprintf("message differs:\n  want %s\n  got  %s", g.Error.Message, fe.Error())
		}
		return ""
	}
	if err != nil {
		return "unexpected error: " + err.Error()
	}
	if strings.Join(got.Externals, ",") != strings.Join(g.Externals, ",") {
		return fmt.Sprintf("externals: want %v, got %v", g.Externals, got.Externals)
	}
	switch c.Mode {
	case "ebv":
		if *got.EBV != *g.EBV {
			return fmt.Sprintf("ebv: want %v, got %v", *g.EBV, *got.EBV)
		}
	case "items":
		if !sameJSON(decodeNumbers(anySlice(g.Items)), anySlice(got.Items)) {
			return fmt.Sprintf("items: want %s, got %s", show(g.Items), show(got.Items))
		}
	default:
		if g.Empty != got.Empty {
			return fmt.Sprintf("empty: want %v, got %v (%s)", g.Empty, got.Empty, show(got.Result))
		}
		if !g.Empty && !sameJSON(decodeNumbers(g.Result), got.Result) {
			return fmt.Sprintf("result: want %s, got %s", show(g.Result), show(got.Result))
		}
		if g.Count != nil && got.Count != nil && *g.Count != *got.Count {
			return fmt.Sprintf("item count: want %d, got %d", *g.Count, *got.Count)
		}
	}
	return ""
}

func anySlice(v []any) any {
	if v == nil {
		return []any{}
	}
	return v
}

func describeOutcome(g golden, err error) string {
	if err != nil {
		return err.Error()
	}
	return "success " + show(g.Result)
}

// TestConformance compares every corpus case with the reference's golden
// outcome and lists every mismatch.
func TestConformance(t *testing.T) {
	t.Parallel()
	files := loadCorpus(t)
	var failures []string
	total := 0
	for _, f := range files {
		for i, c := range f.cases {
			total++
			if msg := runCase(c, f.goldens[i]); msg != "" {
				failures = append(failures, fmt.Sprintf("%s / %s: %s", f.name, c.Name, msg))
			}
		}
	}
	sort.Strings(failures)
	if len(failures) > 0 {
		t.Errorf("%d of %d cases disagree with the reference:\n%s", len(failures), total, strings.Join(failures, "\n"))
	}
	if total < 200 {
		t.Errorf("corpus has %d cases, want at least 200", total)
	}
}
