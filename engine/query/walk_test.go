package query

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestWalkVisitsWhatTheListedWalkLists checks the depth-first walk of a
// JSLT match pre-pass (Path.Walk) against the breadth-first walk that
// lists its results: the same locations, each as many times, and the
// same count of values looked at, which the pre-pass charges to the
// budget.
func TestWalkVisitsWhatTheListedWalkLists(t *testing.T) {
	t.Parallel()
	root := mustJSON(t, `{
		"a": {"b": [{"c": 1, "d": {"c": 2}}, {"c": 3}, [4, {"c": 5}]], "c": 6},
		"list": [{"x": 1, "error": "e"}, {"x": 2}, {"x": 3, "error": null}, 7, [8]],
		"flag": true, "1": {"c": 0}, "": {"": [null]}, "deep": [[[{"c": [1, 2]}]]]
	}`)
	paths := []string{
		"$", "$.a", "$.a.b", "$.a.b[0].c", "$.a.b[-1][1].c", "$.a.b[9]", "$.nope.c", "$.a.b[0].c.d",
		"$..c", "$..c[0]", "$.a..c", "$..b..c", "$..*", "$.*", "$.*.*", "$[*][*]", "$..[0]",
		"$.a.b[*].c", "$.a.b[0,0].c", "$.a.b[1:]", "$.a.b[::-1]", "$.list[?@.error]", "$.list[?!@.error].x",
		"$.list[?@.x > 1]", "$..[?@.c]", "$.list[?$.flag].x", "$['1'].c", "$[''][''][0]", "$.deep..c[*]",
		"$.a['b','c']", "$..['c','d']",
	}
	for _, src := range paths {
		t.Run(src, func(t *testing.T) {
			p := parsePath(src, src, "")
			listed := 0
			_, rel := p.selectLocatedCounting(root, root, &listed, nil)
			var want []string
			for _, r := range rel {
				want = append(want, locString(r))
			}
			var got []string
			looked := p.walkVisit(root, func(path []Seg) { got = append(got, locString(path)) })
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("visited %v\nlisted  %v", got, want)
			}
			if looked != listed {
				t.Errorf("looked at %d values, the listed walk at %d", looked, listed)
			}
		})
	}
}

func locString(path []Seg) string {
	var b strings.Builder
	b.WriteString("$")
	for _, s := range path {
		if s.Index >= 0 {
			fmt.Fprintf(&b, "[%d]", s.Index)
		} else {
			fmt.Fprintf(&b, "[%q]", s.Name)
		}
	}
	return b.String()
}
