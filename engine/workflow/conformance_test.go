package workflow

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/statechart"
	"github.com/jetflow/jetflow/engine/value"
)

// The corpus: conformance/cases/workflow holds the documents,
// conformance/golden/workflow what the reference (gen-workflow.mjs) made
// of them.
const (
	casesDir  = "../../conformance/cases/workflow"
	goldenDir = "../../conformance/golden/workflow"
)

// corpusCase is one case. Its document is kept as JSON text and read the
// way jetflow reads a document's text (LowerJSON, CompileJSON): decoded
// into values first, an escaped lone surrogate would become U+FFFD and
// pass where the reference refuses it.
type corpusCase struct {
	Name  string          `json:"name"`
	Doc   json.RawMessage `json:"doc"`
	Tasks json.RawMessage `json:"tasks"`
}

type goldenError struct {
	Code    *string `json:"code"`
	Path    *string `json:"path"`
	Reason  *string `json:"reason"`
	Message string  `json:"message"`
	Cause   *string `json:"cause"`
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
			for _, d := range compareCase(p.c, p.g) {
				t.Error(d)
			}
		})
	}
}

// difference is one way jetflow's outcome for a case departs from the
// reference's golden. class names what differs (the stage and the part:
// canonical text, error code, path, message, revisions…) and, for errors,
// the reason the reference gave, so the differential run can group them.
type difference struct {
	class  string
	detail string
}

func (d difference) String() string { return d.class + ": " + d.detail }

// compareCase is the one comparison of jetflow with a golden, shared by
// the committed corpus and the differential runs.
func compareCase(c corpusCase, g goldenCase) []difference {
	return append(compareLower(c, g), compareCompile(c, g)...)
}

func compareLower(c corpusCase, g goldenCase) []difference {
	l, err := LowerJSON(c.Doc)
	want := g.Lower
	if want.Error != nil {
		return compareError("lower", err, want.Error)
	}
	if err != nil {
		return []difference{{"lower unexpected error " + reasonClass(err), err.Error()}}
	}
	if got := l.Canonical(); got != *want.Canonical {
		return []difference{{"lower canonical", fmt.Sprintf("canonical text differs\n got %s\nwant %s", got, *want.Canonical)}}
	}
	return nil
}

func compareCompile(c corpusCase, g goldenCase) []difference {
	tasks, err := registryFor(c)
	if err != nil {
		return []difference{{"compile registry", err.Error()}}
	}
	w, err := CompileJSON(c.Doc, Options{Tasks: tasks})
	want := g.Compile
	if want.Error != nil {
		return compareError("compile", err, want.Error)
	}
	if err != nil {
		return []difference{{"compile unexpected error " + reasonClass(err), err.Error()}}
	}
	var diffs []difference
	if got := w.Revisions.Value(); !value.Equal(got, want.Revisions) {
		diffs = append(diffs, difference{"compile revisions", fmt.Sprintf("%v, want %v", got, want.Revisions)})
	}
	if got := w.TaskVersionKeys; strings.Join(got, "\n") != strings.Join(want.TaskVersionOrder, "\n") {
		diffs = append(diffs, difference{"compile task version order", fmt.Sprintf("%q, want %q", got, want.TaskVersionOrder)})
	}
	for k, v := range want.TaskVersions {
		if w.TaskVersions[k] != v {
			diffs = append(diffs, difference{"compile task versions", fmt.Sprintf("%s = %q, want %q", k, w.TaskVersions[k], v)})
		}
	}
	if len(w.TaskVersions) != len(want.TaskVersions) {
		diffs = append(diffs, difference{"compile task versions", fmt.Sprintf("%d task versions, want %d", len(w.TaskVersions), len(want.TaskVersions))})
	}
	// The reference learns the identity from the run's first save, which
	// it never reaches when starting the chart fails (an eventless loop of
	// nested flows exceeds the microstep limit).
	_, startErr := w.Chart.Start(statechart.StartOptions{Context: startContext()})
	if want.IdentitySHA256 == nil {
		if startErr == nil {
			diffs = append(diffs, difference{"compile identity", "the chart starts, but the reference's run failed before its first save"})
		}
		return diffs
	}
	if startErr != nil {
		diffs = append(diffs, difference{"compile start", fmt.Sprintf("the reference's run saved, but the chart does not start: %v", startErr)})
	}
	sum := sha256.Sum256([]byte(value.MustCanonical(w.Identity.Value())))
	if hex.EncodeToString(sum[:]) != *want.IdentitySHA256 {
		diffs = append(diffs, difference{"compile identity", value.MustCanonical(w.Identity.Value()) + " differs from the reference's"})
	}
	return diffs
}

// startContext is the context of a run started with a null input.
func startContext() map[string]any {
	return map[string]any{"input": nil, "data": nil, "event": nil, "results": map[string]any{}, "visits": map[string]any{}}
}

// compareError compares a refusal: the code, the path, the full message
// the reference composed and, where it has one, its cause.
func compareError(stage string, err error, want *goldenError) []difference {
	class := func(part string) string {
		return stage + " " + part + " " + quotedOut(derefOr(want.Reason, want.Message))
	}
	if err == nil {
		return []difference{{class("want error, got success"), "want " + want.Message}}
	}
	var fe *fault.Error
	if !errors.As(err, &fe) {
		return []difference{{class("uncoded error"), fmt.Sprintf("%v, want %s", err, want.Message)}}
	}
	if want.Code == nil || string(fe.Code) != *want.Code {
		return []difference{{class("code " + string(fe.Code)), fmt.Sprintf("got %v, want %s", err, want.Message)}}
	}
	var diffs []difference
	if want.Path == nil {
		if fe.HasPath {
			diffs = append(diffs, difference{class("path"), fmt.Sprintf("path %q, want none", fe.Path)})
		}
	} else if !fe.HasPath || fe.Path != *want.Path {
		diffs = append(diffs, difference{class("path"), fmt.Sprintf("path %q, want %q", fe.Path, *want.Path)})
	}
	if fe.Error() != want.Message {
		diffs = append(diffs, difference{class("message"), fmt.Sprintf("%q, want %q", fe.Error(), want.Message)})
	}
	got := ""
	if fe.Cause != nil {
		got = fe.Cause.Error()
	}
	if want.Cause != nil && got != *want.Cause {
		diffs = append(diffs, difference{class("cause"), fmt.Sprintf("%q, want %q", got, *want.Cause)})
	}
	return diffs
}

func derefOr(s *string, dflt string) string {
	if s != nil {
		return *s
	}
	return dflt
}

// reasonClass is the reason of a coded error, for grouping.
func reasonClass(err error) string {
	var fe *fault.Error
	if errors.As(err, &fe) {
		return string(fe.Code) + " " + quotedOut(fe.Reason)
	}
	return quotedOut(err.Error())
}

// quotedOut shortens a reason to its fixed words: names in quotes and
// numbers vary from document to document and would split one class.
func quotedOut(s string) string {
	var b strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted = !quoted
			if quoted {
				b.WriteString("'…'")
			}
		case quoted:
		case r >= '0' && r <= '9':
			if !strings.HasSuffix(b.String(), "N") {
				b.WriteByte('N')
			}
		default:
			b.WriteRune(r)
		}
	}
	out := []rune(b.String())
	if len(out) > 70 {
		out = out[:70]
	}
	return string(out)
}

// registryFor builds the case's registry as gen-workflow.mjs does: the
// explicit one (null standing for a bare handler), or every task the
// lowered DAGs name at its first declared version.
func registryFor(c corpusCase) (map[string]string, error) {
	if len(c.Tasks) > 0 {
		var explicit map[string]*string
		if err := json.Unmarshal(c.Tasks, &explicit); err != nil {
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
	l, err := LowerJSON(c.Doc)
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
