package query

import (
	"testing"
)

// TestExistFilterWalksAsTheListDoes checks that an existence test over a
// singular query, which walks its names and indexes without a list,
// agrees with the same query's list of nodes on the same candidates.
func TestExistFilterWalksAsTheListDoes(t *testing.T) {
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
	for _, src := range paths {
		f, ok := parsePath(src, src, "").sels[0][0].(*pathFilter)
		if !ok {
			t.Fatalf("%s: no filter", src)
		}
		x, ok := f.expr.(existExpr)
		n, negate := f.expr.(notExpr)
		if negate {
			x, ok = n.x.(existExpr)
		}
		if !ok || !x.q.singular() {
			t.Fatalf("%s: not a singular existence test", src)
		}
		// the same segments without their steps: the general selection
		// (a query of no segments selects the node it starts from)
		listing := &jsonPath{segs: x.q.path.segs, sels: x.q.path.sels}
		for _, v := range values {
			listed := len(listing.segs) == 0 || len(listing.selectInto(nil, x.q.from(v, root), root)) > 0
			if got := f.holds(v, root); got != (listed != negate) {
				t.Errorf("%s on %v: walked %v, listed %v", src, v, got, listed)
			}
		}
	}
}

// TestSingularQuery checks which filter queries are singular (RFC 9535
// §2.3.5.1), a fact the path's steps own: only a singular one compares.
func TestSingularQuery(t *testing.T) {
	t.Parallel()
	singular := []string{"@", "$", "@.a", "@['a']", "@[0]", "@[-1]", "@.a[0]['b']", "@ .a [ 0 ]"}
	notSingular := []string{
		"@.*", "@[*]", "@..a", "@..[0]", "@[0,1]", "@['a','b']", "@[0:1]", "@[?@]", "@.a[*].b",
	}
	for i, q := range append(singular, notSingular...) {
		_, msg := walkPath("$[?" + q + " == 1]")
		if want := i < len(singular); (msg == "") != want {
			t.Errorf("%s: singular %v, want %v (%s)", q, msg == "", want, msg)
		}
	}
}
