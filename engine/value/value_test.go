package value

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

func TestCanonical(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   any
		want string
	}{
		{nil, "null"},
		{true, "true"},
		{1e21, "1e+21"},
		{0.1, "0.1"},
		{math.Copysign(0, -1), "0"},
		{1e-7, "1e-7"},
		{"\u0001\u2028😀\"\\", `"\u0001` + "\u2028😀" + `\"\\"`},
		{map[string]any{"b": 1.0, "a": []any{}, "é": 2.0, "\ue000": 3.0, "😀": 4.0}, `{"a":[],"b":1,"é":2,"😀":4,"` + "\ue000" + `":3}`},
	}
	for _, c := range cases {
		got, err := Canonical(c.in)
		if err != nil || got != c.want {
			t.Errorf("Canonical(%#v) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []any{math.NaN(), math.Inf(1), map[string]any{"a": []any{math.Inf(-1)}}, struct{}{}} {
		if _, err := Canonical(bad); err == nil {
			t.Errorf("Canonical(%#v) accepted a non-JSON value", bad)
		}
	}
	if _, err := Canonical(map[string]any{"a/b": []any{math.NaN()}}); err == nil || !strings.Contains(err.Error(), "/a~1b/0") {
		t.Errorf("error does not locate the bad member: %v", err)
	}
}

// The reference hashes strings of UTF-16 code units; these figures were
// printed by @jarenjs/core's hashContent.
func TestHashContent(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"hello": "m3bicr", `{"a":1}`: "12qlvkh", "é😀x": "apra1n"} {
		if got := HashContent(in); got != want {
			t.Errorf("HashContent(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKeysFollowJavaScript(t *testing.T) {
	t.Parallel()
	m := map[string]any{"b": 1, "10": 1, "2": 1, "a": 1, "01": 1, "4294967295": 1, "-1": 1}
	got := strings.Join(Keys(m), ",")
	if want := "2,10,-1,01,4294967295,a,b"; got != want {
		t.Errorf("Keys = %s, want %s", got, want)
	}
}

func TestDecodeLimits(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 300) + strings.Repeat("]", 300)
	if _, err := Decode([]byte(deep), Limits{}); !errors.Is(err, ErrTooDeep) {
		t.Errorf("deep document: %v", err)
	}
	if _, err := Decode([]byte(`"`+strings.Repeat("x", 100)+`"`), Limits{MaxBytes: 50}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("large document: %v", err)
	}
	if _, err := Decode([]byte(`{} {}`), Limits{}); err == nil {
		t.Error("trailing data accepted")
	}
	v, err := Decode([]byte(`{"a":[1,"[",{"b":null}]}`), Limits{MaxDepth: 3})
	if err != nil || !Equal(v, map[string]any{"a": []any{1.0, "[", map[string]any{"b": nil}}}) {
		t.Errorf("Decode = %#v, %v", v, err)
	}
}

func TestCloneEqual(t *testing.T) {
	t.Parallel()
	v := map[string]any{"a": []any{1.0, map[string]any{"b": "c"}}, "n": nil}
	c := Clone(v).(map[string]any)
	if !Equal(v, c) {
		t.Fatal("clone differs")
	}
	c["a"].([]any)[1].(map[string]any)["b"] = "changed"
	if Equal(v, c) {
		t.Fatal("clone shares structure")
	}
}

// FuzzCanonical checks our encoder against the jcs library's transform of
// the same JSON text.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1e21,0.1,-0]}`, `"\u2028x"`, `{"😀":1,"\ue000":2}`, `[1.5e-7,123456789012345680000]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data, Limits{})
		if err != nil {
			return
		}
		got, err := Canonical(v)
		if err != nil {
			t.Fatalf("Canonical failed on decoded JSON: %v", err)
		}
		want, err := jcs.Transform(data)
		if err != nil {
			return // the library is stricter on some inputs (duplicate keys)
		}
		if got != string(want) {
			t.Fatalf("Canonical = %s, jcs = %s", got, want)
		}
	})
}

func TestJSTextWritesJavaScriptOwnKeyOrder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   any
		want string
	}{
		{map[string]any{"b": 1.0, "10": 2.0, "a": 3.0, "9": 4.0, "": 5.0}, `{"9":4,"10":2,"":5,"a":3,"b":1}`},
		// "01" and 2^32-1 are not array indexes: they sort as strings
		{map[string]any{"4294967295": 1.0, "4294967294": 2.0, "01": 3.0, "1": 4.0}, `{"1":4,"4294967294":2,"01":3,"4294967295":1}`},
		{[]any{map[string]any{"😀": 1.0, "\ue000": 2.0}, 1e21}, `[{"😀":1,"` + "\ue000" + `":2},1e+21]`},
	}
	for _, c := range cases {
		got, err := JSText(c.in)
		if err != nil || got != c.want {
			t.Errorf("JSText(%#v) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if _, err := JSText(map[string]any{"a": math.NaN()}); err == nil || !strings.Contains(err.Error(), "/a") {
		t.Errorf("JSText accepted NaN or did not locate it: %v", err)
	}
}

// FuzzJSText checks that JSText is Stringify for finite data and reads
// back as the same value.
func FuzzJSText(f *testing.F) {
	for _, s := range []string{`{"b":1,"10":[1e21,0.1,-0],"9":{}}`, `"\u2028x"`, `{"😀":1,"\ue000":2,"01":3,"1":4}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data, Limits{})
		if err != nil {
			return
		}
		got, err := JSText(v)
		if err != nil {
			t.Fatalf("JSText failed on decoded JSON: %v", err)
		}
		if s := Stringify(v); got != s {
			t.Fatalf("JSText = %s, Stringify = %s", got, s)
		}
		back, err := Decode([]byte(got), Limits{})
		if err != nil || !Equal(back, v) {
			t.Fatalf("JSText %s reads back as %v, %v", got, back, err)
		}
	})
}

// The reference's empty marker equals only itself, and canonical text
// refuses it where the reference's does, with its pointer.
func TestEmptyMarker(t *testing.T) {
	t.Parallel()
	m := Empty{}
	if !Equal([]any{m}, []any{m}) {
		t.Error("an array holding the marker is not equal to another holding it")
	}
	if Equal([]any{m}, []any{nil}) || Equal(nil, m) || Equal(m, nil) {
		t.Error("the marker equals null")
	}
	if Equal(map[string]any{"a": m}, map[string]any{}) {
		t.Error("an object holding the marker equals the object without it")
	}
	_, err := Canonical(map[string]any{"a": []any{1.0, m}})
	if err == nil || err.Error() != "a symbol is not a JSON value at /a/1" {
		t.Errorf("canonical text of the marker: %v", err)
	}
}

func TestWalksInKeysOrder(t *testing.T) {
	t.Parallel()
	obj := func(kv ...any) *Object {
		o := NewObject(0)
		for i := 0; i < len(kv); i += 2 {
			o.Set(kv[i].(string), kv[i+1])
		}
		return o
	}
	for _, c := range []struct {
		name string
		v    any
		want bool
	}{
		{"plain", map[string]any{"b": 1.0, "a": []any{"x"}}, true},
		{"insertion order", obj("b", 1.0, "a", 2.0), false},
		{"index keys walk first whatever the insertion", obj("b", 1.0, "10", 2.0, "9", 3.0), true},
		{"keys order", obj("9", 1.0, "10", 2.0, "a", 3.0), true},
		{"out of order inside a map", map[string]any{"o": []any{obj("z", 1.0, "a", 2.0)}}, false},
		{"out of order inside an object in order", obj("a", obj("z", 1.0, "a", 2.0)), false},
	} {
		if got := WalksInKeysOrder(c.v); got != c.want {
			t.Errorf("%s: WalksInKeysOrder = %v, want %v", c.name, got, c.want)
		}
	}
}
