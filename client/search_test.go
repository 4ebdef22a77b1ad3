package client

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

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

var parseWhereCases = []struct {
	in   []string
	want map[string]string
	err  string
}{
	{nil, nil, ""},
	{[]string{"customer=c-7"}, map[string]string{"customer": "c-7"}, ""},
	{[]string{"customer=c-7", "tier=gold=1", "n="}, map[string]string{"customer": "c-7", "tier": "gold=1", "n": ""}, ""},
	{[]string{"customer=c-7", "customer=c-7"}, map[string]string{"customer": "c-7"}, ""},
	{[]string{"customer=c-7", "customer=c-8"}, nil, `customer is already "c-7"`},
	{[]string{"customer"}, nil, "want NAME=VALUE"},
	{[]string{"=c-7"}, nil, "want NAME=VALUE"},
	{[]string{"a.b=1"}, nil, `search attribute name "a.b"`},
}

func TestParseWhere(t *testing.T) {
	t.Parallel()
	for _, c := range parseWhereCases {
		got, err := ParseWhere(c.in)
		switch {
		case c.err != "" && (err == nil || !errors.Is(err, ErrBadFilter) || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseWhere(%q) = %v, %v; want an error with %q", c.in, got, err, c.err)
		case c.err == "" && (err != nil || !maps.Equal(got, c.want)):
			t.Errorf("ParseWhere(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func FuzzParseWhere(f *testing.F) {
	for _, c := range parseWhereCases {
		f.Add(strings.Join(c.in, " "))
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseWhere(strings.Fields(s))
		if err != nil {
			if !errors.Is(err, ErrBadFilter) {
				t.Errorf("ParseWhere(%q): %v does not wrap ErrBadFilter", s, err)
			}
			return
		}
		for name := range got {
			if !strings.Contains(s, name+"=") {
				t.Errorf("ParseWhere(%q) made up name %q", s, name)
			}
		}
	})
}
