package query

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/difftest"
)

// pathDiffLine is one line of conformance/differential-jsonpath.mjs.
type pathDiffLine struct {
	Family string `json:"family"`
	Name   string `json:"name"`
	Path   string `json:"path"`
	Out    struct {
		Valid bool   `json:"valid"`
		Crash string `json:"crash"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	} `json:"out"`
}

// TestPathDifferential compares jetflow's verdict on JSONPath strings
// with the reference's on a file of generated strings
// (conformance/differential-jsonpath.mjs). It runs only when
// JETFLOW_PATH_DIFF names such a file:
//
//	node conformance/differential-jsonpath.mjs --seed 1 --count 5000 > /tmp/paths.jsonl
//	JETFLOW_PATH_DIFF=/tmp/paths.jsonl go test ./engine/query -run TestPathDifferential -v
//
// A string must be accepted by both or rejected by both, and a rejected
// one must carry the reference's message exactly.
func TestPathDifferential(t *testing.T) {
	tally := difftest.New(t, "paths")
	for line := range difftest.Lines(t, "JETFLOW_PATH_DIFF", "differential-jsonpath.mjs") {
		var l pathDiffLine
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatal(err)
		}
		if l.Out.Crash != "" {
			tally.Crashed(l.Family)
			continue
		}
		r := difftest.Guard(func() [2]string { class, msg := pathDiffRun(l); return [2]string{class, msg} },
			func(r any) [2]string { return [2]string{"panic", fmt.Sprint("panic: ", r)} })
		class, msg := r[0], r[1]
		if class == "" {
			tally.Agree(l.Family)
			continue
		}
		tally.Disagree(l.Family, []string{class}, func() string {
			return fmt.Sprintf("%s %q\n  %s", l.Name, l.Path, msg)
		})
	}
	tally.Report(t)
}

// pathDiffRun judges one string: the class of the difference and a
// description, or "" when jetflow agrees.
func pathDiffRun(l pathDiffLine) (class, msg string) {
	p, detail := parseRFC(l.Path)
	switch {
	case l.Out.Valid && p == nil:
		return "want valid, got error", detail
	case l.Out.Valid:
		return "", ""
	case l.Out.Error == nil:
		return "no outcome", ""
	case p != nil:
		return "want error, got valid", l.Out.Error.Message
	}
	if want := l.Out.Error.Message; detail != want {
		reason, _, _ := strings.Cut(strings.TrimPrefix(want, "Invalid JSONPath: "), " at position ")
		return "message: " + reason, fmt.Sprintf("want %q\n  got  %q", want, detail)
	}
	return "", ""
}
