package query

import (
	"testing"

	"github.com/theory/jsonpath/spec"
)

// TestExistFilterAgreesWithTheLibrary checks the fast existence filters
// against the library's own evaluation on the same candidates.
func TestExistFilterAgreesWithTheLibrary(t *testing.T) {
	t.Parallel()
	root := mustJSON(t, `{"flag": true, "items": [0]}`)
	values := []any{
		nil, true, 1.0, "s",
		[]any{},
		[]any{1.0, nil},
		map[string]any{},
		mustJSON(t, `{"error": null}`), mustJSON(t, `{"error": {"code": [1, 2]}}`), mustJSON(t, `{"a": [{"b": 1}]}`),
	}
	paths := []string{
		"$[?@.error]", "$[?!@.error]", "$[?@.error.code[1]]", "$[?@.error.code[-1]]", "$[?@.error.code[-3]]",
		"$[?@[0]]", "$[?@[-1]]", "$[?!@[1]]", "$[?@.a[0].b]", "$[?@]", "$[?$.flag]", "$[?!$.nope]", "$[?$.items[0]]",
	}
	fast := 0
	for _, src := range paths {
		p := parsePath(src, src, "")
		x, ok := p.sels[0][0].(*existFilter)
		if !ok {
			t.Errorf("%s: not made an existence filter", src)
			continue
		}
		fast++
		for _, v := range values {
			if got, want := x.holds(v, root), x.Eval(v, root); got != want {
				t.Errorf("%s on %v: fast %v, library %v", src, v, got, want)
			}
		}
	}
	// filters that compare or call functions stay the library's
	for _, src := range []string{"$[?@.a == 1]", "$[?@.a || @.b]", "$[?length(@) > 1]", "$[?@..a]", "$[?@[*]]"} {
		if _, ok := parsePath(src, src, "").sels[0][0].(*spec.FilterSelector); !ok {
			t.Errorf("%s: should be left to the library", src)
		}
	}
	if fast != len(paths) {
		t.Fatalf("%d of %d filters fast", fast, len(paths))
	}
}
