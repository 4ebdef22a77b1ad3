package workflow

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/value"
)

// TestDifferential compares jetflow with the reference on a file of
// generated documents (conformance/differential-workflow.mjs). It runs
// only when JETFLOW_WORKFLOW_DIFF names such a file:
//
//	node conformance/differential-workflow.mjs --seed 1 --count 5000 > /tmp/wfdiff-1.jsonl
//	JETFLOW_WORKFLOW_DIFF=/tmp/wfdiff-1.jsonl go test ./engine/workflow -run TestDifferential -v
//
// Each document goes through compareCase, the comparison TestConformance
// makes for the committed corpus. It prints the counts, then up to
// JETFLOW_DIFF_SHOW (default 5) examples per class of difference.
func TestDifferential(t *testing.T) {
	path := os.Getenv("JETFLOW_WORKFLOW_DIFF")
	if path == "" {
		t.Skip("set JETFLOW_WORKFLOW_DIFF to a file written by conformance/differential-workflow.mjs")
	}
	show := 5
	if s := os.Getenv("JETFLOW_DIFF_SHOW"); s != "" {
		if _, err := fmt.Sscan(s, &show); err != nil {
			t.Fatalf("JETFLOW_DIFF_SHOW=%q: %v", s, err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var runs, crashes, disagree, tooDeep int
	classes := map[string]int{}
	examples := map[string][]string{}
	for sc.Scan() {
		c, g, crash, err := parseDiffLine(sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if crash != "" {
			// the reference threw a plain error, not a coded one: a defect
			// of its own, not an answer to compare
			crashes++
			continue
		}
		runs++
		if deliberate(c) {
			// jetflow bounds what it copies (MaxDepth); the reference has
			// no bound and lowers what its stack allows
			tooDeep++
			continue
		}
		diffs := differentialRun(c, g)
		if len(diffs) == 0 {
			continue
		}
		disagree++
		seen := map[string]bool{}
		for _, d := range diffs {
			if seen[d.class] {
				continue
			}
			seen[d.class] = true
			classes[d.class]++
			if len(examples[d.class]) < show {
				examples[d.class] = append(examples[d.class], fmt.Sprintf("%s %s\n    %s", c.Name, clip(c.Doc), d.detail))
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d documents, %d disagree, %d deeper than MaxDepth, %d the reference crashed on", runs, disagree, tooDeep, crashes)
	names := make([]string, 0, len(classes))
	for c := range classes {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		var b strings.Builder
		fmt.Fprintf(&b, "class %s: %d\n", c, classes[c])
		for _, e := range examples[c] {
			b.WriteString("  " + e + "\n")
		}
		t.Log(b.String())
	}
	if disagree > 0 {
		t.Errorf("%d documents disagree with the reference", disagree)
	}
}

// parseDiffLine reads one line: the case, and either the reference's
// golden or, when it crashed, its message.
func parseDiffLine(line []byte) (corpusCase, goldenCase, string, error) {
	var c corpusCase
	var g goldenCase
	var wrap struct {
		Out json.RawMessage `json:"out"`
	}
	var crash struct {
		Crash string `json:"crash"`
	}
	if err := errors.Join(json.Unmarshal(line, &c), json.Unmarshal(line, &wrap)); err != nil {
		return c, g, "", err
	}
	if err := errors.Join(json.Unmarshal(wrap.Out, &g), json.Unmarshal(wrap.Out, &crash)); err != nil {
		return c, g, "", err
	}
	return c, g, crash.Crash, nil
}

// differentialRun is compareCase guarded against a panic, which is itself
// a disagreement.
func differentialRun(c corpusCase, g goldenCase) (diffs []difference) {
	defer func() {
		if r := recover(); r != nil {
			diffs = []difference{{"panic", fmt.Sprint(r)}}
		}
	}()
	return compareCase(c, g)
}

func clip(data []byte) string {
	if len(data) > 600 {
		return string(data[:600]) + "…"
	}
	return string(data)
}

// deliberate reports a document jetflow refuses by design: one nested
// deeper than MaxDepth.
func deliberate(c corpusCase) bool {
	_, err := LowerJSON(c.Doc)
	return errors.Is(err, value.ErrTooDeep)
}
