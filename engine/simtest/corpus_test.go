package simtest

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"
)

func mustCases(t testing.TB) []Case {
	t.Helper()
	return Cases(t)
}

func TestCorpus(t *testing.T) {
	t.Parallel()
	cases := mustCases(t)
	if len(cases) < 60 {
		t.Fatalf("corpus has %d cases, want at least 60", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			var scenario map[string]any
			if err := json.Unmarshal(c.Scenario, &scenario); err != nil || scenario["document"] == nil {
				t.Fatalf("scenario is not an object with a document: %v", err)
			}
			// Each golden conforms to itself, also with other generations.
			Compare(t, c, c.Golden)
			Compare(t, c, []byte(regenerate(t, c.Golden)))
		})
	}
}

// regenerate renumbers every snapshot generation, as an implementation that
// persists less often would.
func regenerate(t *testing.T, golden []byte) string {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal(golden, &out); err != nil {
		t.Fatal(err)
	}
	calls, _ := out["calls"].([]any)
	for i, c := range calls {
		if snap, ok := c.(map[string]any)["snapshot"].(map[string]any); ok {
			snap["generation"] = float64(i + 1)
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCorpusDetectsChanges mutates every golden's first result or error
// code and expects Compare's Diff to point at it, so the corpus cannot pass
// vacuously.
func TestCorpusDetectsChanges(t *testing.T) {
	t.Parallel()
	for _, c := range mustCases(t) {
		var out map[string]any
		if err := json.Unmarshal(c.Golden, &out); err != nil {
			t.Fatal(err)
		}
		want := ""
		if ce, ok := out["compileError"].(map[string]any); ok {
			ce["code"] = "JF9999"
			want = "/compileError/code"
		} else {
			first := out["calls"].([]any)[0].(map[string]any)
			if e, ok := first["error"].(map[string]any); ok {
				e["path"] = "/changed"
				want = "/calls/0/error/path"
			} else {
				first["result"] = map[string]any{"changed": true}
				want = "/calls/0/result"
			}
		}
		got, _ := json.Marshal(out)
		m, err := Diff(c.Golden, got)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if m == nil || !strings.HasPrefix(m.Pointer, want) {
			t.Errorf("%s: mutation at %s not reported: %v", c, want, m)
		}
	}
}

func TestLoadValidatesPairs(t *testing.T) {
	t.Parallel()
	scenario := `{"document":{},"calls":[{}]}`
	golden := `{"calls":[]}`
	tests := []struct {
		name  string
		files map[string]string
		err   string
	}{
		{name: "ok", files: map[string]string{
			"cases/simulate/a.json":  `[{"name":"x","description":"d","scenario":` + scenario + `}]`,
			"golden/simulate/a.json": `[{"name":"x","output":` + golden + `}]`,
		}},
		{name: "no cases", files: map[string]string{}, err: "no case files"},
		{name: "missing golden", files: map[string]string{
			"cases/simulate/a.json": `[{"name":"x","description":"d","scenario":` + scenario + `}]`,
		}, err: "regenerate"},
		{name: "golden out of order", files: map[string]string{
			"cases/simulate/a.json":  `[{"name":"x","description":"d","scenario":` + scenario + `}]`,
			"golden/simulate/a.json": `[{"name":"y","output":` + golden + `}]`,
		}, err: "does not match"},
		{name: "count differs", files: map[string]string{
			"cases/simulate/a.json":  `[{"name":"x","description":"d","scenario":` + scenario + `}]`,
			"golden/simulate/a.json": `[]`,
		}, err: "1 cases but 0 goldens"},
		{name: "duplicate across files", files: map[string]string{
			"cases/simulate/a.json":  `[{"name":"x","description":"d","scenario":` + scenario + `}]`,
			"golden/simulate/a.json": `[{"name":"x","output":` + golden + `}]`,
			"cases/simulate/b.json":  `[{"name":"x","description":"d","scenario":` + scenario + `}]`,
			"golden/simulate/b.json": `[{"name":"x","output":` + golden + `}]`,
		}, err: "repeats"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fsys := fstest.MapFS{}
			for name, body := range tt.files {
				fsys[name] = &fstest.MapFile{Data: []byte(body)}
			}
			cases, err := Load(fsys)
			if tt.err == "" {
				if err != nil || len(cases) != 1 || cases[0].String() != "a.json#x" {
					t.Fatalf("Load = %v, %v", cases, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("Load error = %v, want it to mention %q", err, tt.err)
			}
		})
	}
}
