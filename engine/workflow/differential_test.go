package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/jetflow/jetflow/engine/difftest"
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
	tally := difftest.New(t, "documents")
	for line := range difftest.Lines(t, "JETFLOW_WORKFLOW_DIFF", "differential-workflow.mjs") {
		c, g, crash, err := parseDiffLine(line)
		if err != nil {
			t.Fatal(err)
		}
		if crash != "" {
			tally.Crashed("")
			continue
		}
		if deliberate(c) {
			// jetflow bounds what it copies (MaxDepth); the reference has
			// no bound and lowers what its stack allows
			tally.Documented("", "deeper than MaxDepth", func() string { return c.Name })
			continue
		}
		diffs := difftest.Guard(func() []difference { return compareCase(c, g) },
			func(r any) []difference { return []difference{{"panic", fmt.Sprint(r)}} })
		if len(diffs) == 0 {
			tally.Agree("")
			continue
		}
		classes := make([]string, len(diffs))
		for i, d := range diffs {
			classes[i] = d.class
		}
		tally.Disagree("", classes, func() string {
			return fmt.Sprintf("%s %s\n  %s", c.Name, difftest.Clip(string(c.Doc), 600), diffs[0].detail)
		})
	}
	tally.Report(t)
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

// deliberate reports a document jetflow refuses by design: one nested
// deeper than MaxDepth.
func deliberate(c corpusCase) bool {
	_, err := LowerJSON(c.Doc)
	return errors.Is(err, value.ErrTooDeep)
}
