package value

import (
	"bytes"
	"encoding/json"
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
	want, _ := json.Marshal(map[string]any{"9": 1, "10": 1, "a": 1})
	if b, _ := AppendGoJSONOrdered(nil, sorted); !bytes.Equal(b, want) {
		t.Errorf("an object in Keys order is written %s, encoding/json writes its map %s", b, want)
	}
}

func FuzzDecodeOrdered(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":2}`, `{"10":1,"9":2}`, `[{"y":{"é":1,"e":2}}]`, `{"a\"b":1,"a":2}`, `1`, `"x"`} {
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
		if _, w, _ := DecodeWritten(data, Limits{}); keysInOrder(data) && len(w) > 0 {
			t.Fatalf("judged in Keys order, but written %v", w)
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
