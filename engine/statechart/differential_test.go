package statechart

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

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
	path := os.Getenv("JETFLOW_SC_DIFF")
	if path == "" {
		t.Skip("set JETFLOW_SC_DIFF to a file written by conformance/differential-statechart.mjs")
	}
	show := 5
	if s := os.Getenv("JETFLOW_DIFF_SHOW"); s != "" {
		_, _ = fmt.Sscan(s, &show)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	runs := map[string]int{}
	crashes := map[string]int{}
	diffs := map[string]int{}
	classes := map[string][]string{}
	for sc.Scan() {
		v, written, err := value.DecodeWritten(sc.Bytes(), value.Limits{})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		c, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: a line is not an object", path)
		}
		family, _ := c["family"].(string)
		if _, crashed := c["crash"]; crashed {
			// the reference threw a plain error, not a coded one: a defect
			// of its own, not an answer to compare
			crashes[family]++
			continue
		}
		runs[family]++
		found := differentialCase(c, written)
		if len(found) == 0 {
			continue
		}
		diffs[family]++
		seen := map[string]bool{}
		for _, d := range found {
			class := family + " " + d.class
			if seen[class] {
				continue
			}
			seen[class] = true
			example := ""
			if len(classes[class]) < show {
				example = fmt.Sprintf("%s chart=%s ops=%s\n    %s", c["name"], clip(c["chart"]), clip(c["ops"]), d.msg)
			}
			classes[class] = append(classes[class], example)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	fams := make([]string, 0, len(runs))
	for f := range runs {
		fams = append(fams, f)
	}
	sort.Strings(fams)
	total := 0
	for _, f := range fams {
		t.Logf("%-8s %6d cases, %5d disagree, %d the reference crashed on", f, runs[f], diffs[f], crashes[f])
		total += diffs[f]
	}
	names := make([]string, 0, len(classes))
	for c := range classes {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		var b strings.Builder
		fmt.Fprintf(&b, "class %s: %d\n", c, len(classes[c]))
		for _, e := range classes[c] {
			if e != "" {
				b.WriteString("  " + e + "\n")
			}
		}
		t.Log(b.String())
	}
	if total > 0 {
		t.Errorf("%d cases disagree with the reference", total)
	}
}

// differentialCase is compareGolden guarded against a panic, which is
// itself a disagreement.
func differentialCase(c map[string]any, written value.Written) (out []difference) {
	defer func() {
		if r := recover(); r != nil {
			out = []difference{{"panic", fmt.Sprintf("panic: %v", r)}}
		}
	}()
	return compareGolden(c, written)
}

func clip(v any) string {
	s := mustCanon(v)
	if len(s) > 1500 {
		s = s[:1500] + "…"
	}
	return s
}
