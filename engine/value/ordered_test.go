package value

import (
	"bytes"
	"slices"
	"strconv"
	"testing"
)

func TestDecodeOrderedKeepsWrittenOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		// keys is the walk order of the top object, or of the object at
		// /0 when the text is an array
		keys []string
		// object says that object is a *Object (its order is not Keys order)
		object bool
	}{
		{`{"a":1,"b":2}`, []string{"a", "b"}, false},
		{`{"b":1,"a":2}`, []string{"b", "a"}, true},
		{`{"zeta":1,"10":1,"9":2,"alpha":0}`, []string{"9", "10", "zeta", "alpha"}, true},
		{`{"10":1,"9":2,"a":0}`, []string{"9", "10", "a"}, false}, // what Go's encoder writes: Keys order once parsed
		{`{"b\u0061":1,"a":2}`, []string{"ba", "a"}, true},        // an escape: judged by the slow path
		{`{"é":1,"e":2}`, []string{"é", "e"}, true},               // non-ASCII likewise
		{`[{"y":1,"x":2},{"a":[{"d":1,"c":2}]}]`, []string{"y", "x"}, true},
		{`{"a":1,"a":2,"0":3}`, []string{"0", "a"}, false}, // a key written twice keeps its first place
		{` { "b" : "}{\"" , "a" : [ "x" , { } ] } `, []string{"b", "a"}, true},
	} {
		v, err := DecodeOrdered([]byte(tc.text), Limits{})
		if err != nil {
			t.Fatalf("%s: %v", tc.text, err)
		}
		plain, _ := Decode([]byte(tc.text), Limits{})
		if !Equal(Plain(v), plain) {
			t.Errorf("%s: %v is not Decode's %v as data", tc.text, v, plain)
		}
		top := v
		if a, ok := v.([]any); ok {
			top = a[0]
		}
		if _, isObject := top.(*Object); isObject != tc.object {
			t.Errorf("%s: a *Object: %v, want %v", tc.text, isObject, tc.object)
		}
		if keys, _ := Ordered(top); !equalStrings(keys, tc.keys) {
			t.Errorf("%s: walks %q, want %q", tc.text, keys, tc.keys)
		}
	}
	v, _ := DecodeOrdered([]byte(`[{"y":1,"x":2},{"a":[{"d":1,"c":2}]}]`), Limits{})
	inner := v.([]any)[1].(map[string]any)["a"].([]any)[0]
	if keys, _ := Ordered(inner); !equalStrings(keys, []string{"d", "c"}) {
		t.Errorf("a nested object walks %q, want d, c", keys)
	}
	if _, err := DecodeOrdered([]byte(`{"a":`), Limits{}); err == nil {
		t.Error("invalid JSON decoded")
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestAppendGoJSONOrderedRoundTrip: what AppendGoJSONOrdered writes,
// DecodeOrdered reads back as the same value, which writes the same
// bytes; a map and an object in Keys order are written as encoding/json
// writes a map.
func TestAppendGoJSONOrderedRoundTrip(t *testing.T) {
	t.Parallel()
	built := NewObject(0)
	built.Set("zeta", 1.0)
	inner := NewObject(0)
	inner.Set("y", "<&>")
	inner.Set("x", []any{NewObject(0), map[string]any{"b": 1.0, "a": nil}})
	built.Set("alpha", inner)
	built.Set("10", true)
	built.Set("9", 2.0)
	sorted := NewObject(0)
	sorted.Set("9", 1.0)
	sorted.Set("10", 1.0)
	sorted.Set("a", 1.0)
	for _, v := range []any{built, sorted, map[string]any{"o": built, "p": []any{sorted}}, 1.0, nil, "s"} {
		b, ok := AppendGoJSONOrdered(nil, v)
		if !ok {
			t.Fatalf("%v: not written", v)
		}
		back, err := DecodeOrdered(b, Limits{})
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		again, _ := AppendGoJSONOrdered(nil, back)
		if !bytes.Equal(b, again) {
			t.Errorf("written %s, read back and written again %s", b, again)
		}
		if m, err := JSText(v); err != nil {
			t.Fatal(err)
		} else if n, _ := JSText(back); m != n {
			t.Errorf("read back as %s, want %s", n, m)
		}
	}
	// a map, and an object in Keys order, are written in Keys order (the
	// order JSON.parse reads back), not sorted as encoding/json sorts
	// them: a key of U+E000-U+FFFF sorts after one outside the Basic
	// Multilingual Plane in UTF-8 but before it in UTF-16
	for _, v := range []any{sorted, map[string]any{"a": 1.0, "10": 1.0, "9": 1.0}} {
		if b, _ := AppendGoJSONOrdered(nil, v); string(b) != `{"9":1,"10":1,"a":1}` {
			t.Errorf("%v is written %s, want Keys order", v, b)
		}
	}
	m := map[string]any{"\U0001D11E": 1.0, "\uFFFF": 2.0}
	b, _ := AppendGoJSONOrdered(nil, m)
	if back, _ := DecodeOrdered(b, Limits{}); !sameShape(back, m) {
		t.Errorf("a map written %s reads back as %#v", b, back)
	}
}

func FuzzDecodeOrdered(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":2}`, `{"10":1,"9":2}`, `[{"y":{"é":1,"e":2}}]`, `{"a\"b":1,"a":2}`, `1`, `"x"`,
		`{"a":1,"b":{"d":[1e400]},"a":3}`, `{"z":{"b":1,"a":"\ud800"},"y":-0.5e-3,"1":true,"0":false}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := DecodeOrdered(data, Limits{})
		plain, perr := Decode(data, Limits{})
		if (err == nil) != (perr == nil) {
			t.Fatalf("DecodeOrdered %v, Decode %v", err, perr)
		}
		if err != nil {
			return
		}
		if !Equal(Plain(v), plain) {
			t.Fatalf("%v differs from Decode's %v", v, plain)
		}
		_, w, _ := DecodeWritten(data, Limits{})
		if keysInOrder(data) && len(w) > 0 {
			t.Fatalf("judged in Keys order, but written %v", w)
		}
		if want := applyWritten(plain, "", w); !sameShape(v, want) {
			t.Fatalf("read %#v, the order written is %#v", v, want)
		}
		b, ok := AppendGoJSONOrdered(nil, v)
		if !ok {
			return
		}
		back, err := DecodeOrdered(b, Limits{})
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if again, _ := AppendGoJSONOrdered(nil, back); !bytes.Equal(b, again) {
			t.Fatalf("written %s, again %s", b, again)
		}
	})
}

// BenchmarkDecodeOrdered is the cost of reading a task's result in
// written order beside Decode's: text in Keys order (a map's encoders
// write it so) takes the fast path; text in another order is read
// twice more.
//
//	go test ./engine/value -run '^$' -bench DecodeOrdered -benchmem
func BenchmarkDecodeOrdered(b *testing.B) {
	sorted := []byte(`{"customer":"ada","items":[{"qty":2,"sku":"KB-42"},{"qty":1,"sku":"MUG-7"}],"total":59.98}`)
	written := []byte(`{"total":59.98,"customer":"ada","items":[{"sku":"KB-42","qty":2},{"sku":"MUG-7","qty":1}]}`)
	for _, c := range []struct {
		name string
		data []byte
		dec  func([]byte, Limits) (any, error)
	}{
		{"Decode/sorted", sorted, Decode},
		{"DecodeOrdered/sorted", sorted, DecodeOrdered},
		{"Decode/written", written, Decode},
		{"DecodeOrdered/written", written, DecodeOrdered},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.dec(c.data, Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// applyWritten is DecodeOrdered's definition: Decode's value with the
// objects DecodeWritten lists rebuilt as Objects in the written order.
func applyWritten(v any, path string, w Written) any {
	switch t := v.(type) {
	case []any:
		for i, x := range t {
			t[i] = applyWritten(x, path+"/"+strconv.Itoa(i), w)
		}
	case map[string]any:
		for k, x := range t {
			t[k] = applyWritten(x, path+"/"+EncodePointerSegment(k), w)
		}
		if keys, ok := w[path]; ok {
			o := NewObject(len(keys))
			for _, k := range keys {
				o.Set(k, t[k])
			}
			return o
		}
	}
	return v
}

// sameShape reports whether a and b are equal with the same Objects in
// the same order and the same maps.
func sameShape(a, b any) bool {
	switch x := a.(type) {
	case *Object:
		y, ok := b.(*Object)
		if !ok || !slices.Equal(x.names, y.names) {
			return false
		}
		for i := range x.vals {
			if !sameShape(x.vals[i], y.vals[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, e := range x {
			if f, ok := y[k]; !ok || !sameShape(e, f) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameShape(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return Equal(a, b)
}
