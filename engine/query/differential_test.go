package query

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

// diffLine is one line of conformance/differential.mjs: a generated case
// and the reference's outcome for it.
type diffLine struct {
	Family string
	c      corpusCase
	g      golden
}

// TestDifferential compares jetflow with the reference on a file of
// generated documents (conformance/differential.mjs). It runs only when
// JETFLOW_DIFF names such a file:
//
//	node conformance/differential.mjs --seed 1 --count 5000 > /tmp/diff.jsonl
//	JETFLOW_DIFF=/tmp/diff.jsonl go test ./engine/query -run TestDifferential -v
//
// It prints the count per family, then up to JETFLOW_DIFF_SHOW (default 5)
// differences per family and class, where a class is what differs (result,
// error code or position, message) and the operator involved.
func TestDifferential(t *testing.T) {
	path := os.Getenv("JETFLOW_DIFF")
	if path == "" {
		t.Skip("set JETFLOW_DIFF to a file written by conformance/differential.mjs")
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
		var l diffLine
		var fam struct {
			Family string          `json:"family"`
			Out    json.RawMessage `json:"out"`
		}
		if err := errors.Join(json.Unmarshal(sc.Bytes(), &fam), json.Unmarshal(sc.Bytes(), &l.c)); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var crash struct {
			Crash string `json:"crash"`
		}
		if err := errors.Join(json.Unmarshal(fam.Out, &l.g), json.Unmarshal(fam.Out, &crash)); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if crash.Crash != "" {
			// the reference threw a plain error, not a coded one: a defect
			// of its own, not an answer to compare
			crashes[fam.Family]++
			continue
		}
		l.Family = fam.Family
		runs[l.Family]++
		msg := differentialRun(l)
		if msg == "" {
			continue
		}
		diffs[l.Family]++
		class := l.Family + " " + diffClass(msg, l.c.Doc)
		if len(classes[class]) < show {
			classes[class] = append(classes[class], fmt.Sprintf("%s %s data=%s\n    %s", l.c.Name, show1(l.c.Doc), show1(l.c.Data), msg))
		} else {
			classes[class] = append(classes[class], "")
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
		t.Logf("%-8s %6d documents, %5d disagree, %d the reference crashed on", f, runs[f], diffs[f], crashes[f])
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
		t.Errorf("%d documents disagree with the reference", total)
	}
}

// differentialRun is runCase guarded against a panic, which is itself a
// disagreement.
func differentialRun(l diffLine) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprintf("panic: %v", r)
		}
	}()
	return runCase(l.c, l.g)
}

// diffClass names what differs and the first operator of the document.
func diffClass(msg string, doc any) string {
	kind, _, _ := strings.Cut(msg, ":")
	if strings.HasPrefix(msg, "want error") {
		kind = "want error"
		if strings.Contains(msg, ", got ") && !strings.Contains(msg, " at \"") {
			kind = "want error, got success"
		}
	}
	return kind + " " + firstOp(doc)
}

func firstOp(doc any) string {
	switch x := doc.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if strings.HasPrefix(k, "$") && k != "$const" && k != "$if" {
				return k
			}
		}
		for _, k := range keys {
			if op := firstOp(x[k]); op != "" {
				return op
			}
		}
	case []any:
		for _, e := range x {
			if op := firstOp(e); op != "" {
				return op
			}
		}
	}
	return ""
}

func show1(v any) string {
	s := show(v)
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}
