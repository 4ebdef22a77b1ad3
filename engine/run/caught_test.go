package run

import "testing"

// TestCaughtIn: only the shape a catch records is a caught failure.
func TestCaughtIn(t *testing.T) {
	t.Parallel()
	e := map[string]any{"code": "JF2006", "message": "m", "nodeId": "n"}
	cases := []struct {
		name string
		v    any
		want *Caught
	}{
		{"caught", map[string]any{"error": e}, &Caught{Code: "JF2006", Message: "m", Node: "n"}},
		{"no node", map[string]any{"error": map[string]any{"code": "JF2006", "nodeId": nil}}, &Caught{Code: "JF2006"}},
		{"another code", map[string]any{"error": map[string]any{"code": "JF2016"}}, nil},
		{"more members", map[string]any{"error": e, "total": 1.0}, nil},
		{"a task's output", map[string]any{"total": 1.0}, nil},
		{"not an object", []any{e}, nil},
		{"nil", nil, nil},
	}
	for _, c := range cases {
		got := CaughtIn(c.v)
		if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
