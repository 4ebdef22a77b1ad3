package value

import (
	"math"
	"testing"
)

func TestToNumberReadsJSONAsJavaScriptDoes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   any
		want float64
	}{
		{nil, 0},
		{true, 1},
		{false, 0},
		{2.5, 2.5},
		{"", 0},
		{" \t5\n", 5},
		{"0x10", 16},
		{"0b11", 3},
		{"-Infinity", math.Inf(-1)},
		{"1e3", 1000},
		{"--1", math.NaN()},
		{"5px", math.NaN()},
		{[]any{}, 0},
		{[]any{"4"}, 4},
		{[]any{nil}, 0},
		{[]any{1.0, 2.0}, math.NaN()},
		{map[string]any{}, math.NaN()},
	}
	for _, c := range cases {
		got := ToNumber(c.in)
		if got != c.want && !(math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("ToNumber(%#v) = %v, want %v", c.in, got, c.want)
		}
	}
}
