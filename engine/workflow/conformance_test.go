package workflow

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// The corpus: conformance/cases/workflow holds the documents,
// conformance/golden/workflow what the reference (gen-workflow.mjs) made
// of them.
const (
	casesDir  = "../../conformance/cases/workflow"
	goldenDir = "../../conformance/golden/workflow"
)

type corpusCase struct {
	Name  string          `json:"name"`
	Doc   any             `json:"doc"`
	Tasks json.RawMessage `json:"tasks"`
}

type goldenError struct {
	Code    *string `json:"code"`
	Path    *string `json:"path"`
	Reason  *string `json:"reason"`
	Message string  `json:"message"`
}

type goldenCase struct {
	Name  string `json:"name"`
	Lower struct {
		Canonical *string      `json:"canonical"`
		Error     *goldenError `json:"error"`
	} `json:"lower"`
	Compile struct {
		Error            *goldenError      `json:"error"`
		Revisions        any               `json:"revisions"`
		TaskVersions     map[string]string `json:"taskVersions"`
		TaskVersionOrder []string          `json:"taskVersionOrder"`
		IdentitySHA256   *string           `json:"identitySha256"`
	} `json:"compile"`
}

type corpusPair struct {
	file string
	c    corpusCase
	g    goldenCase
}

func loadCorpus(t testing.TB) []corpusPair {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(casesDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no workflow cases in %s (%v)", casesDir, err)
	}
	var pairs []corpusPair
	for _, f := range files {
		var cases struct {
			Cases []corpusCase `json:"cases"`
		}
		var golden struct {
			Cases []goldenCase `json:"cases"`
		}
		readJSON(t, f, &cases)
		readJSON(t, filepath.Join(goldenDir, filepath.Base(f)), &golden)
		if len(cases.Cases) != len(golden.Cases) {
			t.Fatalf("%s: %d cases but %d goldens; run node conformance/generate.mjs workflow", f, len(cases.Cases), len(golden.Cases))
		}
		for i, c := range cases.Cases {
			if golden.Cases[i].Name != c.Name {
				t.Fatalf("%s: case %d is %q but its golden is %q", f, i, c.Name, golden.Cases[i].Name)
			}
			pairs = append(pairs, corpusPair{file: filepath.Base(f), c: c, g: golden.Cases[i]})
		}
	}
	return pairs
}

func readJSON(t testing.TB, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	pairs := loadCorpus(t)
	if len(pairs) < 90 {
		t.Fatalf("only %d workflow cases", len(pairs))
	}
	for _, p := range pairs {
		t.Run(strings.TrimSuffix(p.file, ".json")+"/"+p.c.Name, func(t *testing.T) {
			t.Parallel()
			checkLower(t, p)
			checkCompile(t, p)
		})
	}
}

func checkLower(t *testing.T, p corpusPair) {
	l, err := Lower(p.c.Doc)
	want := p.g.Lower
	if want.Error != nil {
		checkError(t, "lower", err, want.Error)
		return
	}
	if err != nil {
		t.Fatalf("lower: unexpected %v", err)
	}
	if got := l.Canonical(); got != *want.Canonical {
		t.Errorf("lower: canonical text differs\n got %s\nwant %s", got, *want.Canonical)
	}
}

func checkCompile(t *testing.T, p corpusPair) {
	tasks, err := registryFor(p)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Compile(p.c.Doc, Options{Tasks: tasks})
	want := p.g.Compile
	if want.Error != nil {
		checkError(t, "compile", err, want.Error)
		return
	}
	if err != nil {
		t.Fatalf("compile: unexpected %v", err)
	}
	if got := w.Revisions.Value(); !value.Equal(got, want.Revisions) {
		t.Errorf("compile: revisions %v, want %v", got, want.Revisions)
	}
	if got := w.TaskVersionKeys; strings.Join(got, "\n") != strings.Join(want.TaskVersionOrder, "\n") {
		t.Errorf("compile: task version order %q, want %q", got, want.TaskVersionOrder)
	}
	for k, v := range want.TaskVersions {
		if w.TaskVersions[k] != v {
			t.Errorf("compile: task version %s = %q, want %q", k, w.TaskVersions[k], v)
		}
	}
	if len(w.TaskVersions) != len(want.TaskVersions) {
		t.Errorf("compile: %d task versions, want %d", len(w.TaskVersions), len(want.TaskVersions))
	}
	sum := sha256.Sum256([]byte(value.MustCanonical(w.Identity.Value())))
	if want.IdentitySHA256 == nil || hex.EncodeToString(sum[:]) != *want.IdentitySHA256 {
		t.Errorf("compile: identity %s differs from the reference's", value.MustCanonical(w.Identity.Value()))
	}
}

// ours are the reasons this package composes; reasons surfaced from the
// statechart, DAG and query compilers are those packages' to match.
func ours(reason string) bool {
	return reason == "workflow input query failed to compile" || strings.HasPrefix(reason, "workflow must be JSON")
}

func checkError(t *testing.T, stage string, err error, want *goldenError) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: succeeded, want %s", stage, want.Message)
	}
	var fe *fault.Error
	if !errors.As(err, &fe) {
		t.Fatalf("%s: %v is not a *fault.Error", stage, err)
	}
	if want.Code == nil || string(fe.Code) != *want.Code {
		t.Fatalf("%s: got %v, want %s", stage, err, want.Message)
	}
	if want.Path == nil {
		if fe.HasPath {
			t.Errorf("%s: path %q, want none", stage, fe.Path)
		}
	} else if !fe.HasPath || fe.Path != *want.Path {
		t.Errorf("%s: path %q, want %q", stage, fe.Path, *want.Path)
	}
	if fe.Code == fault.JF0021 || fe.Code == fault.JF0022 || (want.Reason != nil && ours(*want.Reason)) {
		if fe.Reason != *want.Reason || fe.Error() != want.Message {
			t.Errorf("%s: message %q, want %q", stage, fe.Error(), want.Message)
		}
	}
}

// registryFor builds the case's registry as gen-workflow.mjs does: the
// explicit one (null standing for a bare handler), or every task the
// lowered DAGs name at its first declared version.
func registryFor(p corpusPair) (map[string]string, error) {
	if len(p.c.Tasks) > 0 {
		var explicit map[string]*string
		if err := json.Unmarshal(p.c.Tasks, &explicit); err != nil {
			return nil, err
		}
		tasks := map[string]string{}
		for name, v := range explicit {
			if v == nil {
				tasks[name] = ""
			} else {
				tasks[name] = *v
			}
		}
		return tasks, nil
	}
	tasks := map[string]string{}
	l, err := Lower(p.c.Doc)
	if err != nil {
		return tasks, nil
	}
	for _, id := range l.Work {
		nodes, ok := l.DAGs[id]["nodes"].(map[string]any)
		if !ok {
			continue
		}
		for _, k := range value.Keys(nodes) {
			node, ok := nodes[k].(map[string]any)
			if !ok || node["kind"] != "task" {
				continue
			}
			run, ok := node["run"].(string)
			if _, seen := tasks[run]; !ok || seen {
				continue
			}
			version := ""
			if nonblank(node["version"]) {
				version = node["version"].(string)
			}
			tasks[run] = version
		}
	}
	return tasks, nil
}
