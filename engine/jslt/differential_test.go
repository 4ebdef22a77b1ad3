package jslt_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/difftest"
	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/jslt"
	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
)

// diffCase is one line of conformance/differential-jslt.mjs: a generated
// stylesheet and input, and the reference's outcome for them.
type diffCase struct {
	Family string          `json:"family"`
	Name   string          `json:"name"`
	Sheet  json.RawMessage `json:"sheet"`
	Input  json.RawMessage `json:"input"`
	Out    diffOutcome     `json:"out"`
	// Held says the input is another node's value, its objects'
	// members in the order they were built (as its text writes them)
	Held bool `json:"held"`
}

type diffOutcome struct {
	Result *string    `json:"result"`
	Empty  bool       `json:"empty"`
	Error  *diffError `json:"error"`
	Crash  string     `json:"crash"`
}

type diffError struct {
	Phase   string `json:"phase"`
	Code    string `json:"code"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

// TestDifferential compares jetflow with the reference on a file of
// generated stylesheets (conformance/differential-jslt.mjs). It runs only
// when JETFLOW_JSLT_DIFF names such a file:
//
//	node conformance/differential-jslt.mjs --seed 1 --count 2000 > /tmp/jsltdiff.jsonl
//	JETFLOW_JSLT_DIFF=/tmp/jsltdiff.jsonl go test ./engine/jslt -run TestDifferential -v
//
// Each case is compiled and run as a DAG's jslt node runs it (no
// parameters, the result in the order the bodies built it) and judged
// exactly: the result's text, or the error's phase, code, path and
// message. It prints the counts per family, then up to JETFLOW_DIFF_SHOW
// (default 5) examples per class of difference. The differences known
// not to be matchable (see known) are counted apart and do not fail it.
func TestDifferential(t *testing.T) {
	tally := difftest.New(t, "cases")
	for line := range difftest.Lines(t, "JETFLOW_JSLT_DIFF", "differential-jslt.mjs") {
		var c diffCase
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatal(err)
		}
		if c.Out.Crash != "" {
			tally.Crashed(c.Family)
			continue
		}
		class, msg := differentialRun(t, c)
		example := func() string {
			return fmt.Sprintf("%s sheet=%s input=%s\n  %s", c.Name, clip(c.Sheet), clip(c.Input), msg)
		}
		switch {
		case class == "":
			tally.Agree(c.Family)
		case strings.HasPrefix(class, known):
			tally.Documented(c.Family, strings.TrimPrefix(class, known), example)
		default:
			tally.Disagree(c.Family, []string{class}, example)
		}
	}
	tally.Report(t)
}

// differentialRun judges one case; it returns the class of the difference
// and a description, or "" when jetflow agrees. A panic is a difference.
func differentialRun(t *testing.T, c diffCase) (class, msg string) {
	defer func() {
		if r := recover(); r != nil {
			class, msg = "panic", fmt.Sprintf("panic: %v", r)
		}
	}()
	sheet := decode(t, string(c.Sheet))
	// the deep family's inputs nest past the default limit of a run's
	// input, as a value computed inside a run may
	lim := value.Limits{MaxDepth: 4 * jslt.MaxDepth}
	decodeInput := value.Decode
	if c.Held {
		decodeInput = value.DecodeOrdered
	}
	input, err := decodeInput(c.Input, lim)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	got := diffOutcome{}
	phase := "compile"
	s, err := jslt.Compile(sheet)
	if err == nil {
		phase = "transform"
		var res any
		var ok bool
		res, ok, _, err = s.TransformOrdered(nil, input, nil, c.Held)
		switch {
		case err != nil:
		case !ok:
			got.Empty = true
		default:
			// as the reference's JSON.stringify writes a marker a body
			// left: null in an array, a member holding it left out
			text, terr := value.JSText(finite(query.Unmark(res)))
			if terr != nil {
				text = "unwritable: " + terr.Error()
			}
			got.Result = &text
		}
	}
	if err != nil {
		fe, ok := errors.AsType[*fault.Error](err)
		if !ok {
			return "uncoded error", err.Error()
		}
		got.Error = &diffError{Phase: phase, Code: string(fe.Code), Path: fe.Path, Message: fe.Error()}
	}
	return compareOutcome(c.Out, got)
}

// known starts the class of a difference the reference cannot be
// matched on (conformance/README.md, "Differential runs of JSLT
// stylesheets"): counted and shown, but not a failure.
const known = "known: "

// hostStack reports whether a JT2001 says the reference's JavaScript
// stack ran out before maxDepth, which depends on how far V8 has
// optimized the reference's functions in that process, not only on the
// stylesheet.
func hostStack(msg string) bool { return strings.Contains(msg, "exhausted the host call stack") }

func compareOutcome(want, got diffOutcome) (class, msg string) {
	describe := func(o diffOutcome) string {
		switch {
		case o.Error != nil:
			return fmt.Sprintf("%s error %s", o.Error.Phase, o.Error.Message)
		case o.Empty:
			return "empty"
		case o.Result != nil:
			return *o.Result
		}
		return "nothing"
	}
	diff := fmt.Sprintf("want %s\n    got  %s", describe(want), describe(got))
	switch {
	case want.Error != nil && want.Error.Code == "JT2001" && hostStack(want.Error.Message) && got.Error == nil:
		// the reference's stack ran out on a chain jetflow finished
		// under maxDepth
		return known + "JT2001 host stack, got success", diff
	case want.Error == nil && got.Error != nil:
		return "want success, got " + got.Error.Phase + " " + got.Error.Code, diff
	case want.Error != nil && got.Error == nil:
		return "want " + want.Error.Phase + " " + want.Error.Code + ", got success", diff
	case want.Error != nil:
		w, g := want.Error, got.Error
		switch {
		case w.Phase != g.Phase || w.Code != g.Code:
			return "want " + w.Phase + " " + w.Code + ", got " + g.Phase + " " + g.Code, diff
		case w.Code == "JT2001" && w.Message != g.Message && hostStack(w.Message) != hostStack(g.Message):
			return known + "JT2001 host stack", diff
		case w.Path != g.Path:
			return w.Code + " path", diff
		case w.Message != g.Message:
			return w.Code + " message", diff
		}
		return "", ""
	case want.Empty != got.Empty:
		return "empty", diff
	case want.Result != nil && (got.Result == nil || *want.Result != *got.Result):
		if got.Result != nil && value.Equal(decodeText(*want.Result), decodeText(*got.Result)) {
			return "member order", diff
		}
		return "result", diff
	}
	return "", ""
}

// finite replaces the non-finite numbers in v by null, as the
// reference's JSON.stringify writes them.
func finite(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
	case []any:
		out := make([]any, len(x))
		for i, c := range x {
			out[i] = finite(c)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, c := range x {
			out[k] = finite(c)
		}
		return out
	case *value.Object:
		out := value.NewObject(x.Len())
		for i := range x.Len() {
			k, c := x.At(i)
			out.Set(k, finite(c))
		}
		return out
	}
	return v
}

func decodeText(s string) any {
	v, err := value.Decode([]byte(s), value.Limits{})
	if err != nil {
		return s
	}
	return v
}

func clip(raw json.RawMessage) string { return difftest.Clip(string(raw), 600) }
