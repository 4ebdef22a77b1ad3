package statechart

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
)

const goldenDir = "../../conformance/golden/statechart"

// queryReady reports whether the query engine compiles and evaluates; cases
// with guards or effect with members need it.
func queryReady() bool {
	q, err := query.Compile("$.a", query.Options{})
	if err != nil {
		return false
	}
	ok, err := q.EBV(map[string]any{"a": true}, nil)
	return err == nil && ok
}

// usesQuery reports whether a chart holds a guard or an effect with.
func usesQuery(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, m := range x {
			if (k == "guard" && m != nil) || k == "with" || usesQuery(m) {
				return true
			}
		}
	case []any:
		for _, m := range x {
			if usesQuery(m) {
				return true
			}
		}
	}
	return false
}

// goldenCase is a golden case and the member order its file writes its
// objects in (relative to the case), which the reference read them in.
type goldenCase struct {
	c       map[string]any
	written value.Written
}

func loadGolden(t testing.TB) map[string][]goldenCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no statechart goldens in %s (run conformance/generate.mjs): %v", goldenDir, err)
	}
	sort.Strings(files)
	out := map[string][]goldenCase{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		v, w, err := value.DecodeWritten(data, value.Limits{})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		for i, c := range v.([]any) {
			out[name] = append(out[name], goldenCase{c.(map[string]any), w.Under("/" + strconv.Itoa(i))})
		}
	}
	return out
}

func TestConformance(t *testing.T) {
	t.Parallel()
	ready := queryReady()
	total := 0
	for file, cases := range loadGolden(t) {
		for _, gc := range cases {
			total++
			t.Run(file+"/"+gc.c["name"].(string), func(t *testing.T) {
				t.Parallel()
				if !ready && usesQuery(gc.c["chart"]) {
					t.Skip("needs the query engine")
				}
				for _, d := range compareGolden(gc.c, gc.written) {
					t.Error(d.msg)
				}
			})
		}
	}
	if total < 60 {
		t.Errorf("only %d statechart cases", total)
	}
}

// difference is one way jetflow's outcome of a case differs from the
// reference's: class names what differs (the operation and the member or
// error part), msg says how.
type difference struct {
	class, msg string
}

// compareGolden runs a golden case (a case with the reference's compile and
// results members) through jetflow and returns where the outcomes differ.
// written is the member order of the case's objects as its text writes
// them: the reference reads the chart, payloads, contexts and snapshots in
// that order. TestConformance and TestDifferential both judge with it.
func compareGolden(c map[string]any, written value.Written) []difference {
	opts := Options{Written: written.Under("/chart")}
	if o, ok := c["options"].(map[string]any); ok {
		opts.MaxMicrosteps = goldenMaxMicrosteps(o["maxMicrosteps"])
	}
	chart, err := CompileWith(c["chart"], opts)
	compile := c["compile"].(map[string]any)
	if want, failed := compile["error"].(map[string]any); failed {
		return errorDiff("compile", err, want)
	}
	if err != nil {
		return []difference{{"compile unexpected error", fmt.Sprintf("compile: %v", err)}}
	}
	var out []difference
	if got, want := mustCanon(stringsValue(chart.States())), mustCanon(compile["states"]); got != want {
		out = append(out, difference{"compile states", fmt.Sprintf("states = %s, want %s", got, want)})
	}
	var current any
	results := c["results"].([]any)
	for i, rawOp := range c["ops"].([]any) {
		op := asWritten(rawOp.(map[string]any), written.Under("/ops/"+strconv.Itoa(i)))
		got, next, err := runGoldenOp(chart, op, current)
		want := results[i].(map[string]any)
		name, _ := op["op"].(string)
		if e, failed := want["error"].(map[string]any); failed {
			for _, d := range errorDiff(opName(i, op), err, e) {
				d.class = name + strings.TrimPrefix(d.class, opName(i, op))
				out = append(out, d)
			}
			continue
		}
		if err != nil {
			out = append(out, difference{
				name + " unexpected error",
				fmt.Sprintf("%s: unexpected error %v, want %s", opName(i, op), err, mustCanon(want)),
			})
			continue
		}
		if next != nil {
			current = *next
		}
		if g, w := mustCanon(got), mustCanon(want); g != w {
			out = append(out, difference{
				name + " " + firstDifference(got, want, ""),
				fmt.Sprintf("%s:\n got %s\nwant %s", opName(i, op), g, w),
			})
		}
	}
	return out
}

// asWritten is a copy of op whose payload, context and snapshot keep the
// member order written (w, relative to op), as JSON.parse keeps it.
func asWritten(op map[string]any, w value.Written) map[string]any {
	if len(w) == 0 {
		return op
	}
	out := make(map[string]any, len(op))
	for k, v := range op {
		if k == "payload" || k == "context" || k == "snapshot" {
			v = ordered(v, w, "/"+k)
		}
		out[k] = v
	}
	return out
}

// ordered is v with every object that w lists (by its pointer, at being
// v's) rebuilt as a *value.Object in that order.
func ordered(v any, w value.Written, at string) any {
	switch x := v.(type) {
	case map[string]any:
		keys, ok := w[at]
		if !ok {
			out := make(map[string]any, len(x))
			for k, m := range x {
				out[k] = ordered(m, w, at+"/"+value.EncodePointerSegment(k))
			}
			return out
		}
		o := value.NewObject(len(keys))
		for _, k := range keys {
			o.Set(k, ordered(x[k], w, at+"/"+value.EncodePointerSegment(k)))
		}
		return o
	case []any:
		out := make([]any, len(x))
		for i, m := range x {
			out[i] = ordered(m, w, at+"/"+strconv.Itoa(i))
		}
		return out
	}
	return v
}

// firstDifference is the JSON Pointer of the first member where got and
// want differ, with array indices written as "*" so that it names a class.
func firstDifference(got, want any, at string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return at
		}
		for _, k := range value.Keys(w) {
			if mustCanon(g[k]) != mustCanon(w[k]) {
				return firstDifference(g[k], w[k], at+"/"+k)
			}
		}
		for _, k := range value.Keys(g) {
			if _, ok := w[k]; !ok {
				return at + "/" + k
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return at
		}
		for i := range w {
			if mustCanon(g[i]) != mustCanon(w[i]) {
				return firstDifference(g[i], w[i], at+"/*")
			}
		}
	}
	return at
}

func opName(i int, op map[string]any) string {
	name, _ := op["op"].(string)
	if ev, ok := op["event"].(string); ok {
		name += " " + ev
	}
	return "op " + value.NumberString(float64(i)) + " (" + name + ")"
}

// runGoldenOp runs one operation; next is the state later operations use.
// Step and advance take the snapshot as JSON, as the reference does, since
// each checks its other arguments in its own place among the snapshot's
// checks.
func runGoldenOp(chart *Chart, op map[string]any, current any) (any, *State, error) {
	src := current
	if s, ok := op["snapshot"]; ok {
		src = s
	}
	name := op["op"].(string)
	now, hasNow := goldenNumber(op["now"])
	var at *float64
	if hasNow {
		at = &now
	}
	switch name {
	case "start":
		r, err := chart.Start(StartOptions{Now: now, Context: op["context"], Payload: op["payload"]})
		return resultValue(r, err)
	case "step":
		r, err := chart.StepSnapshot(src, op["event"], StepOptions{Now: at, Context: op["context"], Payload: op["payload"]})
		return resultValue(r, err)
	case "advance":
		r, err := chart.AdvanceSnapshot(src, at, AdvanceOptions{Context: op["context"], Payload: op["payload"], One: truthy(op["one"])})
		return resultValue(r, err)
	}
	state, err := chart.Restore(src)
	if err != nil {
		return nil, nil, err
	}
	switch name {
	case "restore":
		return map[string]any{"restored": state.ToValue()}, &state, nil
	case "final":
		return map[string]any{"final": chart.Final(state)}, nil, nil
	case "events":
		ev, err := chart.Events(state)
		if err != nil {
			return nil, nil, err
		}
		return map[string]any{"events": stringsValue(ev)}, nil, nil
	}
	panic("unknown op " + name)
}

func resultValue(r Result, err error) (any, *State, error) {
	if err != nil {
		return nil, nil, err
	}
	return map[string]any{"result": r.ToValue()}, &r.State, nil
}

// goldenMaxMicrosteps reads the maxMicrosteps option: absent or null is
// the default (0), an integer from 1 is itself, and anything else, which
// the reference refuses, is -1, which CompileWith refuses.
func goldenMaxMicrosteps(v any) int {
	n, ok := v.(float64)
	switch {
	case v == nil:
		return 0
	case ok && n >= 1 && n == math.Trunc(n) && n <= 1<<62:
		return int(n)
	}
	return -1
}

// truthy is JavaScript's truthiness of a JSON value, as the reference
// reads opts.one.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x != 0 && !math.IsNaN(x)
	case string:
		return x != ""
	}
	return true
}

// goldenNumber reads an op's now: absent or null is none, "Infinity",
// "-Infinity" and "NaN" stand for those numbers, and any other value that
// is not a number is not finite either, as the reference judges it.
func goldenNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case nil:
		return 0, false
	case float64:
		return x, true
	case string:
		switch x {
		case "Infinity":
			return math.Inf(1), true
		case "-Infinity":
			return math.Inf(-1), true
		}
	}
	return math.NaN(), true
}

// errorDiff compares an error with the reference's {code, message,
// docPath?}; a null code is a non-coded error (a TypeError in JS).
func errorDiff(what string, err error, want map[string]any) []difference {
	if err == nil {
		return []difference{{what + " no error", fmt.Sprintf("%s: no error, want %v", what, want)}}
	}
	code, _ := want["code"].(string)
	var fe *fault.Error
	if !errors.As(err, &fe) {
		if code != "" {
			return []difference{{what + " error not coded", fmt.Sprintf("%s: error %v is not coded, want %s", what, err, code)}}
		}
		return nil
	}
	var out []difference
	switch {
	case string(fe.Code) != code:
		out = append(out, difference{
			what + " error code " + code,
			fmt.Sprintf("%s: error %q (%s), want %q (%s)", what, fe.Error(), fe.Code, want["message"], code),
		})
	case fe.Error() != want["message"]:
		out = append(out, difference{
			what + " error message " + code,
			fmt.Sprintf("%s: error %q (%s), want %q (%s)", what, fe.Error(), fe.Code, want["message"], code),
		})
	}
	path, hasPath := want["docPath"].(string)
	if fe.HasPath != hasPath || fe.Path != path {
		out = append(out, difference{
			what + " error path " + code,
			fmt.Sprintf("%s: path %q (%v), want %q (%v)", what, fe.Path, fe.HasPath, path, hasPath),
		})
	}
	return out
}

// mustCanon is a value's canonical text, or a note that it has none.
func mustCanon(v any) string {
	s, err := value.Canonical(v)
	if err != nil {
		return "<not JSON: " + err.Error() + ">"
	}
	return s
}
