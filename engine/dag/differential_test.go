package dag_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/difftest"
	"github.com/jetflow/jetflow/engine/value"
)

// TestDifferential compares jetflow with the reference on a file of
// generated cases (conformance/differential-dag.mjs), each compared as
// TestConformance compares a golden. It runs only when JETFLOW_DAG_DIFF
// names such a file:
//
//	node conformance/differential-dag.mjs --seed 1 --count 5000 > /tmp/dag.jsonl
//	JETFLOW_DAG_DIFF=/tmp/dag.jsonl go test ./engine/dag -run TestDifferential -v
//
// It prints the counts, then up to JETFLOW_DIFF_SHOW (default 5) examples
// of each class of difference (what differs, and for errors the codes).
func TestDifferential(t *testing.T) {
	tally := difftest.New(t, "cases")
	for text := range difftest.Lines(t, "JETFLOW_DAG_DIFF", "differential-dag.mjs") {
		raw, written, err := value.DecodeWritten(text, value.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		line := raw.(map[string]any)
		out := line["out"].(map[string]any)
		if _, ok := out["crash"]; ok {
			tally.Crashed("")
			continue
		}
		c := parseCase(line, written)
		diffs := difftest.Guard(func() []difference { return compareCase(c, parseGolden(c.Name, out)) },
			func(r any) []difference { return []difference{{"panic", fmt.Sprint(r)}} })
		if len(diffs) == 0 {
			tally.Agree("")
			continue
		}
		// a case counts once, in the class of its first difference
		d := diffs[0]
		example := func() string { return fmt.Sprintf("%s %s\n  %s", c.Name, brief(line), d.detail) }
		if stackDepth(d) {
			tally.Documented("", d.class, example)
		} else {
			tally.Disagree("", []string{d.class}, example)
		}
	}
	tally.Report(t)
}

// stackDepth reports a JT2001 that jetflow and the reference word apart:
// whether the reference's recursion through $apply exhausts its
// JavaScript stack before depth 1025 depends on how far V8 has optimized
// its dispatch by then, so the same case answers one way in a fresh
// process and the other after thousands of cases (conformance/README.md,
// JSLT stylesheets). jetflow answers as a fresh process does.
func stackDepth(d difference) bool {
	return d.class == "run: JF2006 message" &&
		strings.Count(d.detail, "JT2001: dispatch ") == 2 &&
		strings.Count(d.detail, "exhausted the host call stack") == 1
}

// brief is the case without its outcome, cut to a readable length.
func brief(line map[string]any) string {
	c := make(map[string]any, len(line))
	for k, v := range line {
		if k != "out" && k != "name" {
			c[k] = v
		}
	}
	return difftest.Clip(value.Stringify(c), 1200)
}

// TestStackDepthExcusesOnlyTheHostStack checks the rule that counts a
// JT2001 difference as documented: one side ran out of its host stack,
// not a depth worded otherwise.
func TestStackDepthExcusesOnlyTheHostStack(t *testing.T) {
	t.Parallel()
	host := "JT2001: dispatch recursion exhausted the host call stack before maxDepth 1024 at ''"
	depth := func(n int) string { return fmt.Sprintf("JT2001: dispatch depth %d exceeded maxDepth 1024 at ''", n) }
	tests := []struct {
		d    difference
		want bool
	}{
		{difference{"run: JF2006 message", "got " + host + "\nwant " + depth(1025)}, true},
		{difference{"run: JF2006 message", "got " + depth(1024) + "\nwant " + depth(1025)}, false},
		{difference{"run: JF2006 path", "got " + host + "\nwant " + depth(1025)}, false},
	}
	for _, tt := range tests {
		if got := stackDepth(tt.d); got != tt.want {
			t.Errorf("stackDepth(%q) = %v, want %v", tt.d.detail, got, tt.want)
		}
	}
}
