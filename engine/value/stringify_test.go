package value_test

import (
	"math"
	"testing"

	"github.com/jetflow/jetflow/engine/value"
)

func TestStringify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"null", nil, "null"},
		{"bool", true, "true"},
		{"integer", 3.0, "3"},
		{"exponent", 1e21, "1e+21"},
		{"fraction", 0.5, "0.5"},
		{"negative zero", math.Copysign(0, -1), "0"},
		{"NaN", math.NaN(), "null"},
		{"infinity", math.Inf(-1), "null"},
		{"string escapes", "a\"\n\u0001é", `"a\"\n\u0001é"`},
		{"array", []any{1.0, "x", nil}, `[1,"x",null]`},
		{"object in JS key order", map[string]any{"b": 1.0, "a": 2.0, "10": 3.0, "2": 4.0}, `{"2":4,"10":3,"a":2,"b":1}`},
		{"nested", map[string]any{"k": []any{map[string]any{}}}, `{"k":[{}]}`},
		{"not JSON", struct{}{}, "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := value.Stringify(tt.in); got != tt.want {
				t.Errorf("Stringify = %s, want %s", got, tt.want)
			}
		})
	}
}
