package graph

import (
	"strings"
	"testing"
)

// TestLabelLines: an edge label is drawn whole, wrapped, each merged
// branch on lines of its own; only past maxLabelLines is it cut.
func TestLabelLines(t *testing.T) {
	t.Parallel()
	long := `{"$gt":["$.context.data.risk",0.8]}` + strings.Repeat("x", 300)
	cases := []struct {
		label string
		want  []string
	}{
		{"catch", []string{"catch"}},
		{
			`{"$not":"$.context.data.inStock"} | {"$gt":["$.context.data.risk",0.8]}`,
			[]string{`{"$not":"$.context.data.inStock"}`, `{"$gt":["$.context.data.risk",0.8]}`},
		},
		{
			`payment [{"$ge":["$.payload.amount","$.context.data.total"]}]`,
			[]string{`payment [{"$ge":["$.payload.amount",`, `"$.context.data.total"]}]`},
		},
		{strings.Repeat("a", 45), []string{strings.Repeat("a", 40), "aaaaa"}},
		{long, nil},
	}
	for _, c := range cases {
		got := labelLines(c.label)
		for _, l := range got {
			if n := len([]rune(l)); n > labelLineRunes {
				t.Errorf("%q: line %q has %d runes, more than %d", c.label, l, n, labelLineRunes)
			}
		}
		if c.want == nil {
			if len(got) != maxLabelLines || !strings.HasSuffix(got[len(got)-1], "…") {
				t.Errorf("%q: %q, want %d lines ending in an ellipsis", c.label, got, maxLabelLines)
			}
			continue
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%q: %q, want %q", c.label, got, c.want)
		}
	}
}
