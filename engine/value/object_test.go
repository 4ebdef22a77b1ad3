package value

import (
	"fmt"
	"slices"
	"testing"
)

// build sets each name in turn to its position.
func build(names ...string) *Object {
	o := NewObject(len(names))
	for i, k := range names {
		o.Set(k, float64(i))
	}
	return o
}

func TestObjectKeepsJavaScriptOrder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		set  []string
		want []string
	}{
		{"insertion order", []string{"zeta", "alpha", "mid"}, []string{"zeta", "alpha", "mid"}},
		{"array indexes first by number", []string{"b", "10", "a", "2", "0"}, []string{"0", "2", "10", "b", "a"}},
		{"not array indexes", []string{"b", "01", "-1", "4294967295", "1.5", "4294967294"}, []string{"4294967294", "b", "01", "-1", "4294967295", "1.5"}},
		{"set again keeps the place", []string{"b", "a", "b", "1", "1"}, []string{"1", "b", "a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o := build(c.set...)
			if !slices.Equal(o.Names(), c.want) {
				t.Fatalf("names %q, want %q", o.Names(), c.want)
			}
		})
	}
}

func TestObjectSetAgainKeepsPlaceAndValue(t *testing.T) {
	t.Parallel()
	o := build("b", "a")
	o.Set("b", "new")
	if v, _ := o.Get("b"); v != "new" || o.Names()[0] != "b" || o.Len() != 2 {
		t.Fatalf("after re-set: names %q, b = %v", o.Names(), v)
	}
}

func TestObjectDeleteThenSetMovesLast(t *testing.T) {
	t.Parallel()
	o := build("b", "a", "c", "7")
	o.Delete("b")
	o.Delete("7")
	o.Set("b", 1.0)
	o.Set("7", 2.0)
	if want := []string{"7", "a", "c", "b"}; !slices.Equal(o.Names(), want) {
		t.Fatalf("names %q, want %q", o.Names(), want)
	}
	if _, ok := o.Get("zz"); ok {
		t.Fatal("Get of a missing key reported a member")
	}
}

func TestObjectIndexedWhenLarge(t *testing.T) {
	t.Parallel()
	o := NewObject(0)
	var want []string
	for i := range 40 {
		k := fmt.Sprintf("k%02d", 39-i)
		o.Set(k, float64(i))
		want = append(want, k)
	}
	o.Set("5", "five") // shifts every index
	want = append([]string{"5"}, want...)
	o.Delete("k20")
	want = slices.DeleteFunc(want, func(k string) bool { return k == "k20" })
	if !slices.Equal(o.Names(), want) {
		t.Fatalf("names %q, want %q", o.Names(), want)
	}
	for i, k := range want {
		v, ok := o.Get(k)
		_, at := o.At(i)
		if !ok || !Equal(v, at) {
			t.Fatalf("Get(%q) = %v, %v; At(%d) = %v", k, v, ok, i, at)
		}
	}
}

func TestObjectAsJSONData(t *testing.T) {
	t.Parallel()
	inner := build("y", "x")
	o := NewObject(3)
	o.Set("zeta", 1.0)
	o.Set("10", []any{inner})
	o.Set("alpha", inner)
	m := map[string]any{"alpha": map[string]any{"x": 1.0, "y": 0.0}, "zeta": 1.0, "10": []any{map[string]any{"y": 0.0, "x": 1.0}}}

	if got, _ := JSText(o); got != `{"10":[{"y":0,"x":1}],"zeta":1,"alpha":{"y":0,"x":1}}` {
		t.Errorf("JSText = %s", got)
	}
	if got := Stringify(o); got != `{"10":[{"y":0,"x":1}],"zeta":1,"alpha":{"y":0,"x":1}}` {
		t.Errorf("Stringify = %s", got)
	}
	canon, _ := Canonical(o)
	if want, _ := Canonical(m); canon != want {
		t.Errorf("Canonical = %s, want %s", canon, want)
	}
	if !Equal(o, m) || !Equal(m, o) || !Equal(o, Clone(o)) || Equal(o, build("zeta")) {
		t.Error("Equal does not treat an Object as the JSON data it holds")
	}
	p := Plain([]any{o})
	if HasObject(p) || !Equal(p, []any{m}) {
		t.Errorf("Plain left an Object or changed the data: %#v", p)
	}
	if !IsObject(o) || TypeName(o) != "object" {
		t.Error("an Object is not an object")
	}
	if n, ok := Len(o); !ok || n != 3 {
		t.Errorf("Len = %d, %v", n, ok)
	}
	keys, _ := Ordered(o)
	if !slices.Equal(keys, []string{"10", "zeta", "alpha"}) {
		t.Errorf("Ordered = %q", keys)
	}
}

func TestPlainAllocatesNothingWithoutObjects(t *testing.T) {
	v := map[string]any{"a": []any{1.0, "x", map[string]any{"b": true}}}
	if n := testing.AllocsPerRun(100, func() { _ = Plain(v) }); n != 0 {
		t.Fatalf("Plain allocated %v times on plain data", n)
	}
}
