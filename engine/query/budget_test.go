package query

import (
	"errors"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
)

// wantLimit fails unless err is a JQ2009 at path whose reason says which.
func wantLimit(t *testing.T, err error, path, says string) {
	t.Helper()
	var fe *fault.Error
	if !errors.As(err, &fe) || fe.Code != fault.JQ2009 || fe.Path != path || !strings.Contains(fe.Reason, says) {
		t.Fatalf("want JQ2009 at %q saying %q, got %v", path, says, err)
	}
}

// TestBytesLimit checks that every kind of value a query creates is
// charged against limits.bytes, at the node that creates it.
func TestBytesLimit(t *testing.T) {
	t.Parallel()
	words := make([]any, 50)
	for i := range words {
		words[i] = strings.Repeat("w", 40)
	}
	obj := map[string]any{}
	for _, k := range strings.Split("abcdefghij", "") {
		obj[k] = 1.0
	}
	data := map[string]any{"s": strings.Repeat("a", 2000), "w": words, "o": obj, "n": mustJSON(t, "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]")}
	members := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"k` + strings.Repeat("x", i) + `":1`)
		}
		return b.String()
	}
	cases := []struct {
		name, doc, path string
	}{
		{"doubling $concat", `{"$fold":{"s":"x"},"$for":{"i":{"$range":[1,20]}},"$return":{"$concat":["$s","$s"]}}`, "/$return/$concat"},
		{"$string-join", `{"$string-join":["$.w[*]"]}`, "/$string-join"},
		{"$upper", `{"$upper":"$.s"}`, "/$upper"},
		{"$substring", `{"$substring":["$.s",1]}`, "/$substring"},
		{"$replace", `{"$replace":["$.s","a","bb"]}`, "/$replace"},
		{"array constructor", `{"$let":{"x":"$.n[*]"},"$return":["$x","$x","$x"]}`, "/$return"},
		{"object constructor", `{` + members(25) + `}`, ""},
		{"$map", `{"$map":[["a",1],["b",2],["c",3],["d",4],["e",5],["f",6],["g",7],["h",8],["i",9],["j",10],["k",11],["l",12],["m",13],["n",14],["o",15],["p",16],["q",17],["r",18],["s",19],["t",20]]}`, "/$map"},
		{"FLWOR sequence", `{"$for":{"i":{"$range":[1,100]}},"$return":"$i"}`, ""},
		{"$range", `{"$count":{"$range":[1,100]}}`, "/$count/$range"},
		{"$sort", `{"$sort":"$.w[*]"}`, "/$sort"},
		{"$reverse", `{"$reverse":"$.w[*]"}`, "/$reverse"},
		{"$seq", `{"$seq":["$.n[*]","$.n[*]"]}`, "/$seq"},
		{"$entries", `{"$entries":"$.o"}`, "/$entries"},
		{"$groupby", `{"$for":{"i":{"$range":[1,100]}},"$groupby":{"k":{"$mod":["$i",2]}},"$return":"$k"}`, "/$groupby"},
		{"$orderby", `{"$count":{"$for":{"i":{"$range":[1,100]}},"$orderby":"$i","$return":1}}`, "/$count/$orderby"},
		{"sliding windows", `{"$count":{"$for":{"w":{"$in":"$.n","$window":"sliding","$size":15}},"$return":1}}`, "/$count/$for/w/$in"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			q, err := Compile(mustJSON(t, c.doc), Options{Limits: Limits{Bytes: 1000}})
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = q.Eval(data, nil)
			wantLimit(t, err, c.path, "limits.bytes (1000 bytes")
			// The default limit leaves the same query alone.
			q, err = Compile(mustJSON(t, c.doc), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := q.Eval(data, nil); err != nil {
				t.Fatalf("with the default limits: %v", err)
			}
		})
	}
}

// TestBudgetShared checks that a budget bounds evaluations together: each
// evaluation fits the limit, the third does not fit what is left, and
// every later one fails at once; without a budget each starts afresh.
func TestBudgetShared(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, doc, path, says string
		budget                func(steps, bytes int) Budget
	}{
		{
			"steps", `{"$some":{"a":{"$range":[1,300]},"b":{"$range":[1,300]}},"$satisfies":false}`, "/$satisfies",
			"step budget", func(steps, _ int) Budget { return Budget{Steps: steps*5/2 + 1} },
		},
		{
			"bytes", `{"$count":{"$for":{"i":{"$range":[1,100]}},"$return":{"$concat":["$i","abcdefghij"]}}}`, "/$count/$return/$concat",
			"byte budget", func(_, bytes int) Budget { return Budget{Bytes: bytes*5/2 + 1} },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			q, err := Compile(mustJSON(t, c.doc), Options{})
			if err != nil {
				t.Fatal(err)
			}
			var probe Budget
			if _, err := q.Within(&probe).EBV(nil, nil); err != nil {
				t.Fatal(err)
			}
			steps, bytes := probe.Spent()
			if steps == 0 || (bytes == 0) != (c.name == "steps") {
				t.Fatalf("one evaluation spent %d steps and %d bytes", steps, bytes)
			}
			b := c.budget(steps, bytes)
			for i := range 2 {
				if _, err := q.Within(&b).EBV(nil, nil); err != nil {
					t.Fatalf("evaluation %d: %v", i+1, err)
				}
			}
			if s, n := b.Spent(); s != 2*steps || n != 2*bytes {
				t.Fatalf("two evaluations spent %d steps and %d bytes, want %d and %d", s, n, 2*steps, 2*bytes)
			}
			_, err = q.Within(&b).EBV(nil, nil)
			wantLimit(t, err, c.path, c.says)
			// What is spent stays spent: even the cheapest query fails now.
			lit, err := Compile(true, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if c.name == "steps" {
				_, _, err = lit.Within(&b).Eval(nil, nil)
				wantLimit(t, err, "", c.says)
			}
			// The query alone is well within its own limits, every time.
			for range 3 {
				if _, err := q.EBV(nil, nil); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestBudgetReplacesOwnLimits: within a budget, a query may spend more
// than its own step limit, and a zero budget has the default limits.
func TestBudgetReplacesOwnLimits(t *testing.T) {
	t.Parallel()
	doc := mustJSON(t, `{"$some":{"a":{"$range":[1,100]},"b":{"$range":[1,100]}},"$satisfies":false}`)
	q, err := Compile(doc, Options{Limits: Limits{Steps: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = q.EBV(nil, nil)
	wantLimit(t, err, "/$satisfies", "limits.steps (1000 expression")
	b := Budget{Steps: 20000}
	if _, err := q.Within(&b).EBV(nil, nil); err != nil {
		t.Fatalf("within a budget of 20000 steps: %v", err)
	}
	items, err := q.Within(nil).Items(nil, nil)
	if err == nil {
		t.Fatalf("Within(nil) ignored the query's own limits: %v", items)
	}
	var zero Budget
	if zero.stepLimit() != DefaultLimits.Steps || zero.byteLimit() != DefaultLimits.Bytes {
		t.Fatalf("the zero budget has limits %d and %d", zero.stepLimit(), zero.byteLimit())
	}
}

// TestBudgetSameResults: charging a budget never changes a result.
func TestBudgetSameResults(t *testing.T) {
	t.Parallel()
	data := mustJSON(t, `{"a":[3,1,2],"o":{"x":"y"},"s":"Hello"}`)
	for _, doc := range []string{
		`{"$sort":"$.a[*]"}`, `{"$entries":"$.o"}`, `{"$upper":"$.s"}`, `["$.a[*]",{"k":"$.s"}]`,
		`{"$for":{"x":"$.a"},"$orderby":"$x","$return":{"$concat":["$x","!"]}}`,
	} {
		q, err := Compile(mustJSON(t, doc), Options{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := q.Items(data, nil)
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		var b Budget
		got, err := q.Within(&b).Items(data, nil)
		if err != nil || jsonText(got) != jsonText(want) {
			t.Fatalf("%s: within a budget %v (%v), alone %v", doc, got, err, want)
		}
	}
}
