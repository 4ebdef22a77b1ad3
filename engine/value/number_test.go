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

// ItemString writes a number as String(n) does, which an array's text
// carries into a concatenation: [1e6] + 5 is "10000005" in JavaScript
// (answers from node).
func TestItemStringWritesNumbersAsJavaScript(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   float64
		want string
	}{
		{1e6, "1000000"},
		{math.Copysign(0, -1), "0"},
		{1e21, "1e+21"},
		{0.000001, "0.000001"},
		{1e-7, "1e-7"},
		{123456789012, "123456789012"},
		{1.5, "1.5"},
	}
	for _, c := range cases {
		if got, ok := ItemString(c.in); !ok || got != c.want {
			t.Errorf("ItemString(%v) = %q, %v, want %q", c.in, got, ok, c.want)
		}
	}
}
