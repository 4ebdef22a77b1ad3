package client

import "testing"

func TestLookup(t *testing.T) {
	t.Parallel()
	doc := map[string]any{"input": map[string]any{"a": []any{"x", true, 2.5}, "o": map[string]any{"k/~": "v"}}}
	for _, c := range []struct {
		ptr, want string
		ok        bool
	}{
		{"/input/a/0", "x", true},
		{"/input/a/1", "true", true},
		{"/input/a/2", "2.5", true},
		{"/input/a/3", "", false},
		{"/input/a/01", "", false},
		{"/input/a/-1", "", false},
		{"/input/o/k~1~0", "v", true},
		{"/input/o", "", false},
		{"/input/missing", "", false},
		{"/data", "", false},
	} {
		got, ok := Lookup(doc, c.ptr)
		if got != c.want || ok != c.ok {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", c.ptr, got, ok, c.want, c.ok)
		}
	}
}

func FuzzLookup(f *testing.F) {
	for _, p := range []string{"/input/a/0", "/input/o/k~1~0", "/data", "", "/input/a/99999999999999999999"} {
		f.Add(p)
	}
	doc := map[string]any{"input": map[string]any{"a": []any{"x", 1.0}, "o": map[string]any{"k/~": "v"}}}
	f.Fuzz(func(t *testing.T, ptr string) {
		if v, ok := Lookup(doc, ptr); !ok && v != "" {
			t.Errorf("Lookup(%q) = %q without a value", ptr, v)
		}
	})
}
