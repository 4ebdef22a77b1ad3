package query

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
)

func mustJSON(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON %s: %v", s, err)
	}
	return v
}

// TestDeepNesting checks that hostile nesting is refused with JQ0011, not a
// stack overflow, and that the default depth admits ordinary documents.
func TestDeepNesting(t *testing.T) {
	t.Parallel()
	for _, n := range []int{100, 300, 5000} {
		doc := strings.Repeat(`{"$not":`, n) + "true" + strings.Repeat("}", n)
		var v any
		dec := json.NewDecoder(strings.NewReader(doc))
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		q, err := Compile(v, Options{})
		if n <= 100 {
			if err != nil {
				t.Fatalf("depth %d: %v", n, err)
			}
			if _, _, err := q.Eval(nil, nil); err != nil {
				t.Fatalf("depth %d eval: %v", n, err)
			}
			continue
		}
		if fault.CodeOf(err) != fault.JQ0011 {
			t.Fatalf("depth %d: want JQ0011, got %v", n, err)
		}
	}
}

// TestHostileQueriesStop checks that unbounded work ends in a JQ2xxx error.
func TestHostileQueriesStop(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"counting loop":   `{"$for": {"x": {"$range": [1, 9007199254740991]}}, "$return": "$x"}`,
		"nested loops":    `{"$for": {"x": {"$range": [1, 100000]}, "y": {"$range": [1, 100000]}}, "$where": false, "$return": 1}`,
		"doubling string": `{"$fold": {"s": "ab"}, "$for": {"i": {"$range": [1, 64]}}, "$return": {"$concat": ["$s", "$s"]}}`,
		"doubling array":  `{"$fold": {"a": [1]}, "$for": {"i": {"$range": [1, 64]}}, "$return": {"$seq": ["$a", "$a"]}}`,
		"some forever":    `{"$some": {"x": {"$range": [1, 9007199254740991]}}, "$satisfies": false}`,
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			q, err := Compile(mustJSON(t, doc), Options{Limits: Limits{Steps: 1000000}})
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = q.Eval(map[string]any{}, nil)
			c := fault.CodeOf(err)
			if c != fault.JQ2009 && c != fault.JQ2007 {
				t.Fatalf("want JQ2009 or JQ2007, got %v", err)
			}
		})
	}
}

// TestConcurrentEval evaluates one compiled query from many goroutines.
func TestConcurrentEval(t *testing.T) {
	t.Parallel()
	q, err := Compile(mustJSON(t, `{"$for": {"x": "$.a"}, "$where": {"$match": ["$x", "a.*"]}, "$orderby": "$x", "$return": {"$upper": "$x"}}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	data := mustJSON(t, `{"a": ["ab", "b", "ac"]}`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				v, _, err := q.Eval(data, nil)
				if err != nil || len(v.([]any)) != 2 {
					t.Errorf("got %v %v", v, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestExternalsAndDoc(t *testing.T) {
	t.Parallel()
	doc := mustJSON(t, `[{"$add": ["$b", "$a"]}, "$b", {"$let": {"c": 1}, "$return": "$c"}]`)
	q, err := Compile(doc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(q.Externals(), ","); got != "b,a" {
		t.Fatalf("externals %q", got)
	}
	_, err = q.Items(nil, map[string]any{"b": 1.0})
	if fault.CodeOf(err) != fault.JQ2006 {
		t.Fatalf("want JQ2006, got %v", err)
	}
}
