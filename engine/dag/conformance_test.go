package dag_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/dag"
	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
)

// The corpus lives in conformance/cases/dag; conformance/gen-dag.mjs ran
// the reference on it to write conformance/golden/dag.
const (
	casesDir  = "../../conformance/cases/dag"
	goldenDir = "../../conformance/golden/dag"
)

type dagCase struct {
	Name     string
	Doc      any
	Registry map[string]any // name -> version string or null; nil map when absent
	HasReg   bool
	Input    any
	Mocks    map[string]any
	HasMocks bool
	Seed     map[string]any
	HasSeed  bool
	// Written is the member order of the case's objects as written: the
	// generator hands a mock's value, a mock's query and the seed to the
	// reference as JSON.parse read them (the document and the input it
	// canonicalizes first).
	Written value.Written
	// Race names nodes that fail in the same step; which one the reference
	// reports depends on its checkpoint store's latency. With the
	// generator's store, which answers at once, it is the one the golden
	// records, and ScheduleWave reports that one: the driver checks it
	// exactly, and that it is one of Race.
	Race []any
}

type goldenCase struct {
	name    string
	compile map[string]any
	run     map[string]any
}

func loadJSON(t *testing.T, path string) any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := value.Decode(data, value.Limits{})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func loadCorpus(t *testing.T) (map[string]dagCase, []goldenCase) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(casesDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dag cases in %s (%v)", casesDir, err)
	}
	cases := map[string]dagCase{}
	var goldens []goldenCase
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		all, written, err := value.DecodeWritten(data, value.Limits{})
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for i, raw := range all.([]any) {
			c := parseCase(raw.(map[string]any), written.Under("/"+strconv.Itoa(i)))
			cases[c.Name] = c
		}
		golden := loadJSON(t, filepath.Join(goldenDir, filepath.Base(file)))
		for _, raw := range golden.([]any) {
			m := raw.(map[string]any)
			goldens = append(goldens, parseGolden(m["name"].(string), m))
		}
	}
	return cases, goldens
}

// parseCase reads a case as conformance/gen-dag.mjs defines it; written
// is the member order of its objects as written (value.DecodeWritten).
func parseCase(m map[string]any, written value.Written) dagCase {
	c := dagCase{Name: m["name"].(string), Doc: m["doc"], Input: m["input"], Written: written}
	if r, ok := m["registry"]; ok {
		c.HasReg, c.Registry = true, r.(map[string]any)
	}
	if r, ok := m["mocks"]; ok {
		c.HasMocks, c.Mocks = true, r.(map[string]any)
	}
	if r, ok := m["race"]; ok {
		c.Race = r.([]any)
	}
	if r, ok := m["seed"]; ok {
		c.HasSeed, c.Seed = true, r.(map[string]any)
	}
	return c
}

// parseGolden reads the reference's outcome for a case: {compile, run?}.
func parseGolden(name string, m map[string]any) goldenCase {
	g := goldenCase{name: name, compile: m["compile"].(map[string]any)}
	g.run, _ = m["run"].(map[string]any)
	return g
}

// queryEngineWorks reports whether engine/query evaluates yet; cases that
// embed queries wait for it.
func queryEngineWorks() bool {
	q, err := query.Compile("$.a", query.Options{})
	if err != nil {
		return false
	}
	v, ok, err := q.Eval(map[string]any{"a": 1.0}, nil)
	return err == nil && ok && v == 1.0
}

func usesQuery(c dagCase) bool {
	if m, ok := c.Doc.(map[string]any); ok {
		if nodes, ok := m["nodes"].(map[string]any); ok {
			for _, n := range nodes {
				if decl, ok := n.(map[string]any); ok {
					_, with := decl["with"]
					_, q := decl["query"]
					if with || q {
						return true
					}
				}
			}
		}
		if edges, ok := m["edges"].([]any); ok {
			for _, e := range edges {
				if em, ok := e.(map[string]any); ok {
					if _, ok := em["select"]; ok {
						return true
					}
				}
			}
		}
	}
	for _, mock := range c.Mocks {
		if _, ok := mock.(map[string]any)["query"]; ok {
			return true
		}
	}
	return false
}

func TestConformance(t *testing.T) {
	t.Parallel()
	cases, goldens := loadCorpus(t)
	if len(goldens) < 50 {
		t.Fatalf("only %d golden cases", len(goldens))
	}
	queries := queryEngineWorks()
	for _, g := range goldens {
		c, ok := cases[g.name]
		if !ok {
			t.Fatalf("golden %q has no case", g.name)
		}
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			if !queries && usesQuery(c) {
				t.Skip("engine/query does not evaluate yet")
			}
			checkCase(t, c, g)
		})
	}
}

func options(c dagCase) dag.Options {
	if !c.HasReg {
		return dag.Options{}
	}
	reg := map[string]string{}
	for name, v := range c.Registry {
		s, _ := v.(string)
		reg[name] = s
	}
	return dag.Options{Tasks: reg}
}

// difference is one way jetflow's outcome differs from the reference's:
// class names what differs (a differential run counts by it), detail says
// how.
type difference struct {
	class, detail string
}

func (d difference) String() string { return d.class + ": " + d.detail }

func checkCase(t *testing.T, c dagCase, g goldenCase) {
	t.Helper()
	for _, d := range compareCase(c, g) {
		t.Error(d)
	}
}

// compareCase compiles and, when the case has mocks, runs c as the
// reference did, and lists every way the outcome differs from g.
func compareCase(c dagCase, g goldenCase) []difference {
	d, err := dag.Compile(c.Doc, options(c))
	if want, ok := g.compile["error"].(map[string]any); ok {
		if err == nil {
			return []difference{{
				"compile: want error " + want["code"].(string) + ", got success",
				fmt.Sprint(want["message"]),
			}}
		}
		return compareError("compile", err, want)
	}
	if err != nil {
		var fe *fault.Error
		code := "plain"
		if errors.As(err, &fe) {
			code = string(fe.Code)
		}
		return []difference{{"compile: want success, got error " + code, err.Error()}}
	}
	var diffs []difference
	if got, want := d.Nodes(), g.compile["nodes"].([]any); !value.Equal(toAny(got), want) {
		diffs = append(diffs, difference{"compile: nodes", fmt.Sprintf("%v, want %v", got, want)})
	}
	if got, want := d.Output(), g.compile["output"]; got != want {
		diffs = append(diffs, difference{"compile: output", fmt.Sprintf("%q, want %v", got, want)})
	}
	versions := map[string]any{}
	for k, v := range d.TaskVersions() {
		versions[k] = v
	}
	if want := g.compile["taskVersions"]; !value.Equal(versions, want) {
		diffs = append(diffs, difference{"compile: taskVersions", fmt.Sprintf("%v, want %v", versions, want)})
	}
	if g.run != nil {
		diffs = append(diffs, compareRun(d, c, g.run)...)
	}
	return diffs
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// compareError compares a coded error with the reference's record:
// code, reason, message, path and node id.
func compareError(stage string, err error, want map[string]any) []difference {
	var fe *fault.Error
	if !errors.As(err, &fe) {
		return []difference{{stage + ": want " + want["code"].(string) + ", got a plain error", err.Error()}}
	}
	if string(fe.Code) != want["code"] {
		return []difference{{
			stage + ": want " + want["code"].(string) + ", got " + string(fe.Code),
			fmt.Sprintf("got %s\n    want %v", fe.Error(), want["message"]),
		}}
	}
	var diffs []difference
	if fe.Reason != want["reason"].(string) || fe.Error() != want["message"].(string) {
		diffs = append(diffs, difference{
			stage + ": " + string(fe.Code) + " message",
			fmt.Sprintf("got %s\n    want %v", fe.Error(), want["message"]),
		})
	}
	path, hasPath := want["path"]
	if fe.HasPath != hasPath || (hasPath && fe.Path != path) {
		diffs = append(diffs, difference{
			stage + ": " + string(fe.Code) + " path",
			fmt.Sprintf("%q (%v), want %v (%v)", fe.Path, fe.HasPath, path, hasPath),
		})
	}
	if id, ok := want["nodeId"]; ok && fe.NodeID != id {
		diffs = append(diffs, difference{
			stage + ": " + string(fe.Code) + " nodeId",
			fmt.Sprintf("%q, want %v (%s)", fe.NodeID, id, fe.Error()),
		})
	}
	return diffs
}

func compareRun(d *dag.DAG, c dagCase, want map[string]any) []difference {
	var diffs []difference
	add := func(class, format string, args ...any) {
		diffs = append(diffs, difference{"run: " + class, fmt.Sprintf(format, args...)})
	}
	waves, out, err := drive(d, c)
	if errors.Is(err, errStalled) {
		add("stalled", "%s", describe(waves))
		return diffs
	}
	for len(waves) > 0 {
		last := waves[len(waves)-1]
		if len(last.calls) > 0 || len(last.saves) > 0 {
			break
		}
		waves = waves[:len(waves)-1]
	}
	wantWaves := want["waves"].([]any)
	if len(waves) != len(wantWaves) {
		add("wave count", "%d waves, want %d:\n     got %s\n    want %s", len(waves), len(wantWaves), describe(waves), value.Stringify(wantWaves))
	}
	// Within one wave the reference's order of calls and saves depends on
	// its checkpoint store's latency (a save delays the node's consumers by
	// a few microtasks), so waves compare as sets.
	for i := 0; i < len(waves) && i < len(wantWaves); i++ {
		ww := wantWaves[i].(map[string]any)
		if got, want := byNode(waves[i].calls), byNode(orNil(ww["calls"])); !value.Equal(got, want) {
			add("wave calls", "wave %d\n     got %s\n    want %s", i, value.Stringify(got), value.Stringify(want))
		}
		if got, want := byNode(waves[i].saves), byNode(orNil(ww["saves"])); !value.Equal(got, want) {
			add("wave saves", "wave %d\n     got %s\n    want %s", i, value.Stringify(got), value.Stringify(want))
		}
	}
	if wantErr, ok := want["error"].(map[string]any); ok {
		if err == nil {
			add("want error "+wantErr["code"].(string)+", got success", "result %s, want %v", value.Stringify(out), wantErr["message"])
		} else {
			diffs = append(diffs, compareError("run", err, wantErr)...)
			var fe *fault.Error
			if c.Race != nil && (!errors.As(err, &fe) || !slices.Contains(c.Race, any(fe.NodeID))) {
				add("race", "error %v, want a failure of one of %v", err, c.Race)
			}
		}
	} else {
		switch {
		case err != nil:
			add("want success, got error", "%v", err)
		case !value.Equal(out, want["result"]):
			add("result", "%s, want %s", value.Stringify(out), value.Stringify(want["result"]))
		}
	}
	if rev, err := d.Revision(); err != nil || rev != want["revision"] {
		add("revision", "%q (%v), want %v", rev, err, want["revision"])
	}
	id, err := d.Identity(c.Input)
	if err != nil || !value.Equal(id, want["identity"]) {
		add("identity", "%s (%v), want %s", value.Stringify(id), err, value.Stringify(want["identity"]))
	}
	return diffs
}

// byNode returns the records of a wave sorted by node id.
func byNode(v any) []any {
	list, _ := v.([]any)
	out := slices.Clone(list)
	sort.SliceStable(out, func(i, j int) bool {
		return value.CompareUTF16(out[i].(map[string]any)["node"].(string), out[j].(map[string]any)["node"].(string)) < 0
	})
	return out
}

// orNil maps an empty golden list to the nil slice an empty wave holds.
func orNil(v any) any {
	if a, ok := v.([]any); ok && len(a) == 0 {
		return []any(nil)
	}
	return v
}

func describe(waves []wave) string {
	var b strings.Builder
	for i, w := range waves {
		if i > 0 {
			b.WriteString(" | ")
		}
		b.WriteString(value.Stringify(w.calls))
		b.WriteString(" saves ")
		b.WriteString(value.Stringify(w.saves))
	}
	return b.String()
}
