package workflow

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

func mustDecode(t testing.TB, text string) any {
	t.Helper()
	v, err := value.Decode([]byte(text), value.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

const example = `{
  "$workflow": "0.2", "revision": "review/1", "initial": "prepare",
  "states": {
    "prepare": {"work": {"task": "prepare", "version": "1"}, "then": "check", "limit": 3},
    "check": {"choose": [{"guard": "$.context.data.ready", "to": "review"}], "otherwise": "prepare"},
    "review": {
      "on": [{"event": "approve", "guard": "$.payload.accept", "to": "done"}, {"event": "retry", "to": "prepare"}],
      "after": {"ms": 60000, "to": "expired"}},
    "round": {"flow": {"initial": "job", "states": {
      "job": {"work": {"task": "job", "version": "2"}, "input": "$.context.input", "then": "end", "catch": "end"},
      "end": {"final": true}}}, "then": "done"},
    "done": {"final": true},
    "expired": {"final": true}
  }
}`

func TestLowerSpecs(t *testing.T) {
	t.Parallel()
	l, err := Lower(mustDecode(t, example))
	if err != nil {
		t.Fatal(err)
	}
	wantOrder := []string{
		"/states/check", "/states/done", "/states/expired", "/states/prepare", "/states/review",
		"/states/round", "/states/round/flow/states/end", "/states/round/flow/states/job",
	}
	if strings.Join(l.States, " ") != strings.Join(wantOrder, " ") {
		t.Errorf("States = %v, want %v", l.States, wantOrder)
	}
	if strings.Join(l.Work, " ") != "/states/prepare /states/round/flow/states/job" {
		t.Errorf("Work = %v", l.Work)
	}
	if l.Initial != "/states/prepare" || l.Revision != "review/1" || l.Version != "0.1" {
		t.Errorf("Initial %q Revision %q Version %q", l.Initial, l.Revision, l.Version)
	}
	prepare := l.Specs["/states/prepare"]
	if prepare.Kind != KindWork || prepare.Limit != 3 || prepare.Then != "/states/check" || prepare.Catch != "" || prepare.Input != DefaultInput {
		t.Errorf("prepare = %+v", prepare)
	}
	check := l.Specs["/states/check"]
	if check.Kind != KindChoose || len(check.Choose) != 1 || check.Choose[0].Guard != "$.context.data.ready" ||
		check.Choose[0].To != "/states/review" || check.Otherwise != "/states/prepare" || check.Limit != 0 {
		t.Errorf("check = %+v", check)
	}
	review := l.Specs["/states/review"]
	if review.Kind != KindOn || len(review.On) != 2 || review.On[0].Event != "approve" || !review.On[0].HasGuard ||
		review.On[1].HasGuard || review.On[1].To != "/states/prepare" || review.After == nil ||
		review.After.Ms != 60000 || review.After.To != "/states/expired" {
		t.Errorf("review = %+v", review)
	}
	round := l.Specs["/states/round"]
	if round.Kind != KindFlow || round.Then != "/states/done" || round.Initial != "/states/round/flow/states/job" {
		t.Errorf("round = %+v", round)
	}
	job := l.Specs["/states/round/flow/states/job"]
	if job.Parent != "/states/round" || job.Input != "$.context.input" || job.Catch != "/states/round/flow/states/end" {
		t.Errorf("job = %+v", job)
	}
	if raw := job.Raw(); raw["kind"] != "work" || raw["input"] != "$.context.input" {
		t.Errorf("job raw = %v", raw)
	}
	if l.Specs["/states/done"].Kind != KindFinal || l.Sources["/states/done"] != "/states/done" {
		t.Errorf("done = %+v", l.Specs["/states/done"])
	}
}

func TestLowerDoesNotShareWithCaller(t *testing.T) {
	t.Parallel()
	text := `{"$workflow":"0.2","revision":"r","initial":"x","states":{
		"x":{"work":{"dag":{"$dag":"0.1","nodes":{"i":{"kind":"input"},"o":{"kind":"output"}},"edges":[{"from":"i","to":"o"}]}},"then":"d"},
		"d":{"final":true}}}`
	doc := mustDecode(t, text)
	before := value.MustCanonical(doc)
	l, err := Lower(doc)
	if err != nil {
		t.Fatal(err)
	}
	if value.MustCanonical(doc) != before {
		t.Fatal("Lower modified its argument")
	}
	lowered := l.Canonical()
	if !strings.Contains(lowered, `"o":{"checkpoint":true,"kind":"output"}`) {
		t.Errorf("the inline output was not checkpointed: %s", lowered)
	}
	doc.(map[string]any)["revision"] = "changed"
	doc.(map[string]any)["states"].(map[string]any)["d"].(map[string]any)["final"] = false
	if l.Canonical() != lowered {
		t.Fatal("the lowering shares data with the caller's document")
	}
	// The document keeps the author's declaration; only the region changes.
	if strings.Contains(value.MustCanonical(l.Document), "checkpoint") {
		t.Error("the output checkpoint leaked into the document")
	}
}

func TestLowerIsDeterministic(t *testing.T) {
	t.Parallel()
	doc := mustDecode(t, example)
	first, err := Lower(doc)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		again, err := Lower(doc)
		if err != nil {
			t.Fatal(err)
		}
		if again.Canonical() != first.Canonical() {
			t.Fatal("two lowerings of one document differ")
		}
	}
	// Lowering the lowered document reproduces the lowering.
	again, err := Lower(first.Document)
	if err != nil || again.Canonical() != first.Canonical() {
		t.Fatalf("relowering: %v", err)
	}
}

func TestLowerRefusesWhatIsNotJSON(t *testing.T) {
	t.Parallel()
	deep := any("leaf")
	for range 100000 {
		deep = []any{deep}
	}
	wide := strings.Repeat("x", MaxSize+1)
	states := func(extra any) map[string]any {
		return map[string]any{
			"$workflow": "0.2", "revision": "r", "initial": "d",
			"states": map[string]any{"d": map[string]any{"final": true, "limit": extra}},
		}
	}
	tests := []struct {
		name  string
		doc   any
		cause string
		is    error
	}{
		{"NaN", states(math.NaN()), "NaN is not a JSON number at /states/d/limit", nil},
		{"infinity", states(math.Inf(-1)), "-Infinity is not a JSON number at /states/d/limit", nil},
		{"a Go struct", states(struct{}{}), "a struct {} is not JSON data at /states/d/limit", nil},
		{"a channel at the root", make(chan int), "a chan int is not JSON data at the document root", nil},
		{"invalid UTF-8", states("\xff"), "not valid UTF-8", nil},
		{"invalid UTF-8 member name", map[string]any{"\xfe": 1}, "not valid UTF-8", nil},
		{"the first of several in canonical order", map[string]any{
			"z": math.NaN(), "\xfe": 1, "a": map[string]any{"y": math.Inf(1), "b": []any{1, math.NaN()}, "c": math.NaN()},
		}, "NaN is not a JSON number at /a/b/1", nil},
		{"a bad member name before a bad value", map[string]any{"b": math.NaN(), "a\xfe": 1}, "not valid UTF-8 is not JSON data at the document root", nil},
		{"deep nesting", states(deep), "deeper than 256", value.ErrTooDeep},
		{"huge document", states(wide), "more than", value.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Lower(tt.doc)
			var fe *fault.Error
			if !errors.As(err, &fe) || fe.Code != fault.JF0021 || fe.Path != "" || !fe.HasPath || fe.Reason != "workflow must be JSON" {
				t.Fatalf("got %v, want JF0021 workflow must be JSON at ''", err)
			}
			if fe.Cause == nil || !strings.Contains(fe.Cause.Error(), tt.cause) {
				t.Errorf("cause %v, want it to mention %q", fe.Cause, tt.cause)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("%v is not %v", err, tt.is)
			}
		})
	}
}

func TestLowerAcceptsGoIntegers(t *testing.T) {
	t.Parallel()
	doc := map[string]any{
		"$workflow": "0.2", "revision": "r", "initial": "d",
		"states": map[string]any{"d": map[string]any{"final": true, "limit": 3}, "e": map[string]any{"final": true, "limit": int64(-0)}},
	}
	_, err := Lower(doc)
	if fault.CodeOf(err) != fault.JF0021 {
		t.Fatalf("got %v", err)
	}
	if p, _ := fault.PathOf(err); p != "/states/e/limit" {
		t.Fatalf("path %q: the int limit 3 should have been accepted", p)
	}
}

func TestLowerJSON(t *testing.T) {
	t.Parallel()
	if _, err := LowerJSON([]byte(example)); err != nil {
		t.Fatal(err)
	}
	withRevision := func(r string) string {
		return `{"$workflow":"0.2","revision":"` + r + `","initial":"d","states":{"d":{"final":true}}}`
	}
	for _, r := range []string{`\ud83d\ude00`, `\\ud800`, `x\\\\ud800`, `\u00e9\\`} {
		if _, err := LowerJSON([]byte(withRevision(r))); err != nil {
			t.Errorf("revision %s: %v", r, err)
		}
	}
	for _, text := range []string{
		``, `{`, `{"$workflow":"0.2"} {}`, strings.Repeat("[", 300) + strings.Repeat("]", 300),
		withRevision(`\ud800`), withRevision(`\udc00x`), withRevision(`\ud83d\u0041`), withRevision(`a\ud83d`),
	} {
		_, err := LowerJSON([]byte(text))
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.Code != fault.JF0021 || fe.Reason != "workflow must be JSON" {
			t.Errorf("%.20q: got %v", text, err)
		}
	}
}

// TestLowerJSONNamesTheFirstFault checks the cause of a refused text: the
// reference names the first unpaired surrogate or out-of-range number in
// its canonical walk, members sorted and a name before its value.
func TestLowerJSONNamesTheFirstFault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text, cause string
	}{
		{"surrogate in a value", `{"revision":"\ud800"}`, "a string with an unpaired surrogate is not valid Unicode at /revision"},
		{"surrogate in a name names the object", `{"a":{"b":1,"\udc00":2}}`, "a string with an unpaired surrogate is not valid Unicode at /a"},
		{"sorted order, not text order", `{"states":{"\ud800":1},"revision":"\udc00"}`, "at /revision"},
		{"a name before its value", `{"a":{"\ud800":1e400}}`, "unpaired surrogate is not valid Unicode at /a"},
		{"number beyond the double range", `{"z":1e400,"a":[0,-1e999]}`, "-Infinity is not a JSON number at /a/1"},
		{"the last duplicate wins", `{"a":"\ud800","a":1,"b":1e400}`, "Infinity is not a JSON number at /b"},
		{"a lone surrogate name sorts by its code unit", `{"a":{"\uff41":"\ud800","\ud83d":1}}`, "not valid Unicode at /a"},
		{"at the root", `"\ud800"`, "not valid Unicode at the document root"},
		{"pointer escapes", `{"a/b":{"~":"\ud800"}}`, "at /a~1b/~0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := LowerJSON([]byte(tt.text))
			var fe *fault.Error
			if !errors.As(err, &fe) || fe.Code != fault.JF0021 || fe.Cause == nil {
				t.Fatalf("got %v, want JF0021 with a cause", err)
			}
			if !strings.HasSuffix(fe.Cause.Error(), tt.cause) {
				t.Errorf("cause %q, want it to end with %q", fe.Cause, tt.cause)
			}
		})
	}
}

// TestLowerJSONReportsSyntaxFirst checks that text that is not JSON at
// all is refused for its syntax, as JSON.parse refuses it, even when it
// also holds a number beyond the double range.
func TestLowerJSONReportsSyntaxFirst(t *testing.T) {
	t.Parallel()
	for _, text := range []string{`{"a": tru, "b": 1e400}`, `{"b": 1e400} xyz`, `{"a":01,"b":"\ud800"}`} {
		_, err := LowerJSON([]byte(text))
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.Code != fault.JF0021 || fe.Cause == nil {
			t.Fatalf("%s: got %v, want JF0021 with a cause", text, err)
		}
		if c := fe.Cause.Error(); strings.Contains(c, "JSON number") || strings.Contains(c, "Unicode") {
			t.Errorf("%s: cause %q, want its syntax error", text, c)
		}
	}
}

func TestCycleProofIsIterative(t *testing.T) {
	t.Parallel()
	// A long automatic chain closing on itself: the proof walks it without
	// recursion and names the first state it meets again.
	const n = 20000
	states := map[string]any{}
	for i := range n {
		states[name(i)] = map[string]any{"choose": []any{map[string]any{"guard": true, "to": name((i + 1) % n)}}, "otherwise": name((i + 1) % n)}
	}
	doc := map[string]any{"$workflow": "0.2", "revision": "r", "initial": name(0), "states": states}
	_, err := Lower(doc)
	if fault.CodeOf(err) != fault.JF0022 {
		t.Fatalf("got %v", err)
	}
	if p, _ := fault.PathOf(err); p != "/states/"+name(0) {
		t.Errorf("path %q", p)
	}
}

func name(i int) string { return fmt.Sprintf("s%06d", i) }

func TestJSSemantics(t *testing.T) {
	t.Parallel()
	blank := []string{"", " ", "\t\n\v\f\r", "\u00a0", "\ufeff", "\u1680", "\u2000\u200a", "\u2028\u2029", "\u202f\u205f\u3000"}
	for _, s := range blank {
		if nonblank(s) {
			t.Errorf("nonblank(%q) = true", s)
		}
	}
	for _, v := range []any{"a", "\u0085", "\u180e", "\u200b", " x "} {
		if !nonblank(v) {
			t.Errorf("nonblank(%q) = false", v)
		}
	}
	if nonblank(nil) || nonblank(1.0) {
		t.Error("nonblank accepts a non-string")
	}
	strs := []struct {
		v    any
		want string
	}{
		{nil, "null"},
		{true, "true"},
		{1e21, "1e+21"},
		{-0.5, "-0.5"},
		{"s", "s"},
		{[]any{}, ""},
		{[]any{nil}, ""},
		{[]any{1.0, []any{2.0, nil}, true}, "1,2,,true"},
		{map[string]any{}, "[object Object]"},
		{[]any{map[string]any{}}, "[object Object]"},
	}
	for _, tt := range strs {
		if got := jsString(tt.v, true); got != tt.want {
			t.Errorf("String(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
	if jsString(nil, false) != "undefined" {
		t.Error("absent is not undefined")
	}
	safe := []struct {
		v  any
		ok bool
	}{{1.0, true}, {-3.0, true}, {9007199254740991.0, true}, {9007199254740992.0, false}, {1.5, false}, {"1", false}, {math.Inf(1), false}}
	for _, tt := range safe {
		if _, ok := safeInteger(tt.v); ok != tt.ok {
			t.Errorf("safeInteger(%v) = %v", tt.v, ok)
		}
	}
}
