package jslt_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/jslt"
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
	path := os.Getenv("JETFLOW_JSLT_DIFF")
	if path == "" {
		t.Skip("set JETFLOW_JSLT_DIFF to a file written by conformance/differential-jslt.mjs")
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
	runs, crashes, diffs, knowns := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	classes := map[string][]string{}
	for sc.Scan() {
		var c diffCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if c.Out.Crash != "" {
			// a plain JavaScript error, not a coded one: not an answer
			crashes[c.Family]++
			continue
		}
		runs[c.Family]++
		class, msg := differentialRun(t, c)
		if class == "" {
			continue
		}
		if strings.HasPrefix(class, known) {
			knowns[c.Family]++
		} else {
			diffs[c.Family]++
		}
		class = c.Family + " " + class
		example := ""
		if len(classes[class]) < show {
			example = fmt.Sprintf("%s sheet=%s input=%s\n    %s", c.Name, clip(c.Sheet), clip(c.Input), msg)
		}
		classes[class] = append(classes[class], example)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	fams := make([]string, 0, len(runs))
	for fam := range runs {
		fams = append(fams, fam)
	}
	sort.Strings(fams)
	total := 0
	for _, fam := range fams {
		t.Logf("%-8s %6d cases, %5d disagree, %5d differ as known, %d the reference crashed on",
			fam, runs[fam], diffs[fam], knowns[fam], crashes[fam])
		total += diffs[fam]
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
		res, ok, err = s.TransformOrdered(nil, input, nil, c.Held)
		switch {
		case err != nil:
		case !ok:
			got.Empty = true
		default:
			text, terr := value.JSText(finite(res))
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

// knownDetail reports whether two messages differ only in the detail of
// a JSONPath syntax error, which comes from jetflow's own path parser.
func knownDetail(want, got string) bool {
	for _, mark := range []string{"Invalid JSONPath: ", "is not a valid path: "} {
		w, _, okW := strings.Cut(want, mark)
		g, _, okG := strings.Cut(got, mark)
		if okW && okG && w == g {
			return lastAt(want) == lastAt(got)
		}
	}
	return false
}

// lastAt is the document path a message ends with.
func lastAt(msg string) string {
	i := strings.LastIndex(msg, " at ")
	if i < 0 {
		return ""
	}
	return msg[i:]
}

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
		case w.Message != g.Message && knownDetail(w.Message, g.Message):
			return known + w.Code + " JSONPath detail", diff
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

func clip(raw json.RawMessage) string {
	s := string(raw)
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	return s
}
