package jslt_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/jslt"
	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
)

// transformCase is one stylesheet applied to one input: the result, or
// the error's code and document path (and a part of its message).
type transformCase struct {
	name, sheet, input string
	ext                map[string]any
	want               string // JSON; "" when an error is wanted
	code               fault.Code
	path, text         string
}

var transformCases = []transformCase{
	{name: "identity", sheet: `[]`, input: `{"a":[1,{"b":2}]}`, want: `{"a":[1,{"b":2}]}`},
	{
		name: "vat", sheet: `[{"match":"$..price","body":{"$mul":["$",2]}}]`,
		input: `{"a":{"price":1},"b":[{"price":2}]}`, want: `{"a":{"price":2},"b":[{"price":4}]}`,
	},
	{
		name: "parameter bound", sheet: `[{"match":"$..price","body":{"amount":{"$mul":["$","$rate"]},"at":"$path","c":"$root.c"}}]`,
		input: `{"c":"EUR","items":[{"price":10}]}`, ext: map[string]any{"rate": 1.5},
		want: `{"c":"EUR","items":[{"price":{"amount":15,"at":"$['items'][0]['price']","c":"EUR"}}]}`,
	},
	{
		name: "parameter unbound", sheet: `[{"match":"$..price","body":{"$mul":["$","$rate"]}}]`,
		input: `{"price":1}`, code: fault.JT2004, path: "/0/body/$mul/1", text: "rule /0 failed at location $['price']: JQ2006",
	},
	{
		name: "nested error not wrapped twice", sheet: `[{"match":"$","body":[{"$apply":"$.a"}]},{"match":"$.a","body":{"$div":["$","x"]}}]`,
		input: `{"a":1}`, code: fault.JT2004, path: "/1/body/$div/1", text: "rule /1 failed at location $['a']",
	},
	{name: "sequence result", sheet: `[{"match":"$","body":{"$seq":[1,2]}}]`, input: `0`, want: `[1,2]`},
	{
		name: "member of two items", sheet: `[{"match":"$.a","body":{"$seq":[1,2]}}]`, input: `{"a":0}`,
		code: fault.JT2002, path: "", text: "member 'a' at $['a'] produced 2 items",
	},
	{
		name: "error disposition", sheet: `{"$jslt":"0.1","unmatched":"error","rules":[{"match":"$.a","body":1}]}`, input: `{"a":0}`,
		code: fault.JT2003, path: "/unmatched", text: `no rule in mode "" matched $`,
	},
	{name: "self application", sheet: `[{"body":{"$apply":"$"}}]`, input: `1`, code: fault.JT2001, path: ""},
	{
		name: "nested located applies", sheet: `{"$jslt":"0.1","rules":[
			{"match":"$","body":{"s":[{"$apply":["$.sections[*]","s"]}]}},
			{"mode":"s","match":"$.sections[*]","body":{"id":"$.id","evs":[{"$apply":["$root.events[*]","e"]}]}},
			{"mode":"e","body":{"at":"$path","v":"$"}}]}`,
		input: `{"sections":[{"id":"a"},{"id":"b"}],"events":[1,2]}`,
		want: `{"s":[{"id":"a","evs":[{"at":"$['events'][0]","v":1},{"at":"$['events'][1]","v":2}]},` +
			`{"id":"b","evs":[{"at":"$['events'][0]","v":1},{"at":"$['events'][1]","v":2}]}]}`,
	},
	{
		name: "modes", sheet: `{"$jslt":"0.1","rules":[{"match":"$","body":[{"$apply":["$.*","m"]}]},{"mode":"m","body":{"$add":["$",1]}}]}`,
		input: `{"b":2,"a":1}`, want: `[2,3]`,
	},
}

func decode(t *testing.T, s string) any {
	t.Helper()
	v, err := value.Decode([]byte(s), value.Limits{})
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

func TestTransform(t *testing.T) {
	for _, c := range transformCases {
		t.Run(c.name, func(t *testing.T) {
			s, err := jslt.Compile(decode(t, c.sheet))
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			got, ok, err := s.Transform(nil, decode(t, c.input), c.ext)
			if c.want != "" {
				if err != nil {
					t.Fatalf("transform: %v", err)
				}
				if !ok || !value.Equal(got, decode(t, c.want)) {
					t.Fatalf("got %s (ok %v), want %s", value.Stringify(got), ok, c.want)
				}
				return
			}
			var fe *fault.Error
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, %v; want %s", value.Stringify(got), err, c.code)
			}
			if fe.Code != c.code || fe.Path != c.path || !strings.Contains(fe.Error(), c.text) {
				t.Fatalf("got %s (path %q), want %s at %q containing %q", fe.Error(), fe.Path, c.code, c.path, c.text)
			}
		})
	}
}

func TestExternals(t *testing.T) {
	s, err := jslt.Compile(decode(t, `[{"body":{"a":"$rate","b":"$root","c":"$path"}},{"body":["$tax","$rate"]}]`))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Externals(), ","); got != "rate,tax" {
		t.Fatalf("externals %q, want rate,tax", got)
	}
}

func TestCompileErrors(t *testing.T) {
	for _, c := range []struct {
		sheet string
		code  fault.Code
		path  string
	}{
		{`true`, fault.JT0001, ""},
		{`{"$jslt":"0.2","rules":[]}`, fault.JT0004, "/$jslt"},
		{`[{"match":{}, "body":1}]`, fault.JT0003, "/0/match"},
		{`[{"match":"$[", "body":1}]`, fault.JT0003, "/0/match"},
		{`[{"match":{"schema":{}}, "body":1}]`, fault.JT0006, "/0/match/schema"},
		{`{"$jslt":"0.1","rules":[{"body":{"k":{"$apply":[]}}}]}`, fault.JT0007, "/rules/0/body/k/$apply"},
		{`[{"body":1,"priority":"high"}]`, fault.JT0002, "/0/priority"},
		// the priority is checked before the match
		{`[{"body":1,"match":true,"priority":"high"}]`, fault.JT0002, "/0/priority"},
		// __proto__ is no member to the reference, so this match is empty
		{`[{"match":{"__proto__":{"path":"$"}}, "body":1}]`, fault.JT0003, "/0/match"},
	} {
		_, err := jslt.Compile(decode(t, c.sheet))
		if fault.CodeOf(err) != c.code {
			t.Errorf("%s: got %v, want %s", c.sheet, err, c.code)
			continue
		}
		if p, _ := fault.PathOf(err); p != c.path {
			t.Errorf("%s: path %q, want %q", c.sheet, p, c.path)
		}
	}
}

// TestBudgetBoundsTransformation checks that one budget bounds the bodies
// of a whole transformation: a doubling recursion stops at the limit.
func TestBudgetBoundsTransformation(t *testing.T) {
	s, err := jslt.Compile(decode(t, `[{"body":[{"$apply":"$"},{"$apply":"$"}]}]`))
	if err != nil {
		t.Fatal(err)
	}
	b := &query.Budget{Steps: 1000}
	_, _, err = s.Transform(b, 1.0, nil)
	if fault.CodeOf(err) != fault.JT2004 || !strings.Contains(err.Error(), "JQ2009") {
		t.Fatalf("got %v, want JT2004 wrapping JQ2009", err)
	}
	if steps, _ := b.Spent(); steps > 1001 {
		t.Fatalf("spent %d steps, more than the budget's 1000", steps)
	}
}

// deep nests v n objects deep under "a".
func deep(n int, v any) any {
	for range n {
		v = map[string]any{"a": v}
	}
	return v
}

// TestDeepInput checks the two depth behaviours of the built-in rule: a
// share mode whose rules all need a position returns what lies off the
// way to a match as it is, at any depth; a walk that must descend past
// MaxDepth is JT2001 at the mode's disposition.
func TestDeepInput(t *testing.T) {
	in := deep(jslt.MaxDepth+10, 1.0)
	s, err := jslt.Compile(decode(t, `[{"match":"$..zz","body":1}]`))
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := s.Transform(nil, in, nil)
	if err != nil || !value.Equal(got, in) {
		t.Fatalf("got %v, want the input back", err)
	}
	s, err = jslt.Compile(decode(t, `{"$jslt":"0.1","unmatched":"fresh","rules":[{"match":"$..zz","body":1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Transform(nil, in, nil)
	if fault.CodeOf(err) != fault.JT2001 || !strings.Contains(err.Error(), "dispatch depth 1025 exceeded maxDepth 1024 at /unmatched") {
		t.Fatalf("got %v, want JT2001 at /unmatched", err)
	}
}

// TestPrunedSpine checks that a pruned walk still reaches a match below
// names that need escaping.
func TestPrunedSpine(t *testing.T) {
	s, err := jslt.Compile(decode(t, `[{"match":"$..x","body":"$path"}]`))
	if err != nil {
		t.Fatal(err)
	}
	in := decode(t, `{"it's":{"b\\c":[0,{"x":1}],"\n\u0001":{"x":2}},"o":{"y":3}}`)
	got, _, err := s.Transform(nil, in, nil)
	want := decode(t, `{"it's":{"b\\c":[0,{"x":"$['it\\'s']['b\\\\c'][1]['x']"}],"\n\u0001":{"x":"$['it\\'s']['\\n\\u0001']['x']"}},"o":{"y":3}}`)
	if err != nil || !value.Equal(got, want) {
		t.Fatalf("got %s, %v\nwant %s", value.Stringify(got), err, value.Stringify(want))
	}
}

// TestBudgetBoundsWalk checks that the match pre-pass and the built-in
// walk charge the budget, not only the bodies: a wide input under a
// small budget stops with JQ2009 before any body runs.
func TestBudgetBoundsWalk(t *testing.T) {
	wide := make([]any, 500)
	for i := range wide {
		wide[i] = map[string]any{"k": float64(i)}
	}
	for _, sheet := range []string{
		`[{"match":"$..nothing","body":1}]`,                                      // the pre-pass
		`{"$jslt":"0.1","unmatched":"fresh","rules":[{"match":"$.x","body":1}]}`, // the walk
	} {
		s, err := jslt.Compile(decode(t, sheet))
		if err != nil {
			t.Fatal(err)
		}
		b := &query.Budget{Steps: 100}
		_, _, err = s.Transform(b, map[string]any{"wide": wide}, nil)
		if fault.CodeOf(err) != fault.JQ2009 {
			t.Fatalf("%s: got %v, want JQ2009", sheet, err)
		}
		if _, _, err := s.Transform(nil, map[string]any{"wide": wide}, nil); err != nil {
			t.Fatalf("%s under the default budget: %v", sheet, err)
		}
	}
}

// TestProtoIsNoMember checks that a member named __proto__, at any level
// of a stylesheet, is read as the reference reads it: not at all (its
// copy of the document makes it the prototype, not a member).
func TestProtoIsNoMember(t *testing.T) {
	t.Parallel()
	s, err := jslt.Compile(decode(t, `{"$jslt":"0.1","__proto__":1,"modes":{"__proto__":2,"m":{"unmatched":"error","__proto__":3}},
		"rules":[{"__proto__":{"match":"$.zz"},"match":{"path":"$.a","__proto__":4},"body":{"k":"$","__proto__":5,"c":{"$const":{"__proto__":6,"z":7}}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := s.Transform(nil, decode(t, `{"a":1,"b":2}`), nil)
	if want := decode(t, `{"a":{"k":1,"c":{"z":7}},"b":2}`); err != nil || !value.Equal(got, want) {
		t.Fatalf("got %s, %v; want %s", value.Stringify(got), err, value.Stringify(want))
	}
}
