// Package simtest is test support for `jetflow simulate`: it loads the
// simulation conformance corpus (scenario and golden pairs produced by the
// reference library, see conformance/README.md) and compares an output line
// of the Go simulator with the reference's, reporting the first difference
// as a JSON Pointer. It is imported only by tests.
package simtest

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// Case is one simulation scenario with the reference's answer.
type Case struct {
	// File is the case file the scenario came from, e.g. "waits.json".
	File string
	// Name is unique across the corpus (kebab-case).
	Name        string
	Description string
	// Scenario is exactly what `jetflow simulate SCENARIO` reads.
	Scenario json.RawMessage
	// Golden is the reference's output: {"calls": [...]} or {"compileError": {...}}.
	Golden json.RawMessage
}

// String names the case the way a failure message should.
func (c Case) String() string { return c.File + "#" + c.Name }

// Rerun is the command that reproduces the golden for this case.
func (c Case) Rerun() string {
	return fmt.Sprintf("node conformance/simulate.mjs conformance/cases/simulate/%s %s", c.File, c.Name)
}

type caseEntry struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Scenario    json.RawMessage `json:"scenario"`
}

type goldenEntry struct {
	Name   string          `json:"name"`
	Output json.RawMessage `json:"output"`
}

// Load reads every case of cases/simulate/*.json in fsys (rooted at the
// conformance directory) with its golden from golden/simulate/, in file
// name order and case order within a file.
func Load(fsys fs.FS) ([]Case, error) {
	files, err := fs.Glob(fsys, "cases/simulate/*.json")
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no case files under cases/simulate")
	}
	sort.Strings(files)
	var out []Case
	seen := map[string]string{}
	for _, file := range files {
		base := path.Base(file)
		var cases []caseEntry
		if err := readJSON(fsys, file, &cases); err != nil {
			return nil, err
		}
		var goldens []goldenEntry
		if err := readJSON(fsys, "golden/simulate/"+base, &goldens); err != nil {
			return nil, fmt.Errorf("%w (regenerate with: npm --prefix conformance run generate)", err)
		}
		if len(goldens) != len(cases) {
			return nil, fmt.Errorf("%s: %d cases but %d goldens; regenerate the goldens", base, len(cases), len(goldens))
		}
		for i, k := range cases {
			if k.Name == "" || len(k.Scenario) == 0 {
				return nil, fmt.Errorf("%s[%d]: a case needs a name and a scenario", base, i)
			}
			if goldens[i].Name != k.Name {
				return nil, fmt.Errorf("%s[%d]: golden %q does not match case %q; regenerate the goldens", base, i, goldens[i].Name, k.Name)
			}
			if prev, dup := seen[k.Name]; dup {
				return nil, fmt.Errorf("%s[%d]: case name %q repeats %s", base, i, k.Name, prev)
			}
			seen[k.Name] = base
			out = append(out, Case{
				File: base, Name: k.Name, Description: k.Description,
				Scenario: k.Scenario, Golden: goldens[i].Output,
			})
		}
	}
	return out, nil
}

func readJSON(fsys fs.FS, name string, into any) error {
	raw, err := fs.ReadFile(fsys, name)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// Cases loads the repository's corpus, failing t when it cannot.
func Cases(t testing.TB) []Case {
	t.Helper()
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	cases, err := Load(os.DirFS(dir))
	if err != nil {
		t.Fatalf("simulation corpus: %v", err)
	}
	return cases
}

// Dir locates the repository's conformance directory: next to this source
// file when it is available, else in the working directory or an ancestor.
func Dir() (string, error) {
	var starts []string
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Join(filepath.Dir(file), "..", ".."))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, dir := range starts {
		for {
			candidate := filepath.Join(dir, "conformance")
			if st, err := os.Stat(filepath.Join(candidate, "cases", "simulate")); err == nil && st.IsDir() {
				return candidate, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", fmt.Errorf("conformance/cases/simulate not found from %s", strings.Join(starts, " or "))
}
