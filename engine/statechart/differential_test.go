package statechart

import (
	"fmt"
	"testing"

	"github.com/jetflow/jetflow/engine/difftest"
	"github.com/jetflow/jetflow/engine/value"
)

// TestDifferential compares jetflow with the reference on a file of
// generated cases (conformance/differential-statechart.mjs), judging each
// exactly as TestConformance judges a golden. It runs only when
// JETFLOW_SC_DIFF names such a file:
//
//	node conformance/differential-statechart.mjs --seed 1 --count 5000 > /tmp/scdiff.jsonl
//	JETFLOW_SC_DIFF=/tmp/scdiff.jsonl go test ./engine/statechart -run TestDifferential -v
//
// It prints the count per family, then up to JETFLOW_DIFF_SHOW (default 5)
// examples per family and class, where a class is the operation and what
// differs (the first differing member of a result, or the error's code,
// message or path).
func TestDifferential(t *testing.T) {
	tally := difftest.New(t, "cases")
	for line := range difftest.Lines(t, "JETFLOW_SC_DIFF", "differential-statechart.mjs") {
		v, written, err := value.DecodeWritten(line, value.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		c, ok := v.(map[string]any)
		if !ok {
			t.Fatal("a line is not an object")
		}
		family, _ := c["family"].(string)
		if _, crashed := c["crash"]; crashed {
			tally.Crashed(family)
			continue
		}
		found := difftest.Guard(func() []difference { return compareGolden(c, written) },
			func(r any) []difference { return []difference{{"panic", fmt.Sprintf("panic: %v", r)}} })
		if len(found) == 0 {
			tally.Agree(family)
			continue
		}
		classes := make([]string, len(found))
		for i, d := range found {
			classes[i] = d.class
		}
		tally.Disagree(family, classes, func() string {
			return fmt.Sprintf("%s chart=%s ops=%s\n  %s", c["name"], clip(c["chart"]), clip(c["ops"]), found[0].msg)
		})
	}
	tally.Report(t)
}

func clip(v any) string { return difftest.Clip(mustCanon(v), 1500) }
