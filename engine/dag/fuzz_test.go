package dag_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/dag"
	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// FuzzCompile compiles arbitrary documents and runs whatever compiles with
// tasks that echo their argument: no panic, every refusal a coded JF0xxx
// error with a path, and every run settles within one step per node.
func FuzzCompile(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(casesDir, "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		cases, err := value.Decode(data, value.Limits{})
		if err != nil {
			f.Fatal(file, err)
		}
		list, _ := cases.([]any)
		for _, c := range list {
			f.Add(value.MustCanonical(c.(map[string]any)["doc"]))
		}
	}
	f.Add(fanout3)
	f.Fuzz(fuzzOne)
}

// fuzzOne is one fuzz iteration.
func fuzzOne(t *testing.T, text string) {
	doc, err := value.Decode([]byte(text), value.Limits{MaxBytes: 1 << 16, MaxDepth: 64})
	if err != nil {
		return
	}
	d, err := dag.Compile(doc, dag.Options{})
	if err != nil {
		var fe *fault.Error
		if !errors.As(err, &fe) || !strings.HasPrefix(string(fe.Code), "JF00") || !fe.HasPath {
			t.Fatalf("compile error %v is not a located JF0xxx", err)
		}
		return
	}
	values := map[string]any{}
	for range len(d.Nodes()) + 1 {
		plan, err := d.Schedule(map[string]any{"a": 1.0}, values, nil)
		if err != nil {
			if code := fault.CodeOf(err); code != fault.JF2006 && code != fault.JF2008 {
				t.Fatalf("schedule error %v", err)
			}
			return
		}
		if plan.Done {
			return
		}
		for _, nv := range plan.Values {
			values[nv.ID] = nv.Value
		}
		for _, inv := range plan.Tasks {
			values[inv.Node] = inv.Arg
		}
	}
	t.Fatalf("run did not settle in %d steps", len(d.Nodes())+1)
}
