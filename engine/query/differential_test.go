package query

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/difftest"
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
	tally := difftest.New(t, "documents")
	for line := range difftest.Lines(t, "JETFLOW_DIFF", "differential.mjs") {
		var l diffLine
		var fam struct {
			Family string          `json:"family"`
			Out    json.RawMessage `json:"out"`
		}
		if err := errors.Join(json.Unmarshal(line, &fam), json.Unmarshal(line, &l.c)); err != nil {
			t.Fatal(err)
		}
		var crash struct {
			Crash string `json:"crash"`
		}
		if err := errors.Join(json.Unmarshal(fam.Out, &l.g), json.Unmarshal(fam.Out, &crash)); err != nil {
			t.Fatal(err)
		}
		l.Family = fam.Family
		if crash.Crash != "" {
			tally.Crashed(l.Family)
			continue
		}
		msg := difftest.Guard(func() string { return runCase(l.c, l.g) },
			func(r any) string { return fmt.Sprintf("panic: %v", r) })
		if msg == "" {
			tally.Agree(l.Family)
			continue
		}
		tally.Disagree(l.Family, []string{diffClass(msg, l.c.Doc)}, func() string {
			return fmt.Sprintf("%s %s data=%s\n  %s", l.c.Name, show1(l.c.Doc), show1(l.c.Data), msg)
		})
	}
	tally.Report(t)
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

func show1(v any) string { return difftest.Clip(show(v), 400) }
