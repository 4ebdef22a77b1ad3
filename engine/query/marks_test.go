package query

import (
	"bytes"
	"slices"
	"testing"

	"github.com/jetflow/jetflow/engine/value"
)

// nullsMarked is v with every null replaced by the empty marker, in
// fresh containers.
func nullsMarked(v any) any {
	switch x := v.(type) {
	case nil:
		return empty
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = nullsMarked(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = nullsMarked(e)
		}
		return out
	case *value.Object:
		out := value.NewObject(x.Len())
		for i := range x.Len() {
			k, e := x.At(i)
			out.Set(k, nullsMarked(e))
		}
		return out
	}
	return v
}

// stored is what a record keeps of a marked value: its JSON with null
// for each marker, in member order, and the markers' pointers.
func stored(t testing.TB, v any) ([]byte, []string) {
	t.Helper()
	nulled, at := Marks(v)
	b, ok := value.AppendGoJSONOrdered(nil, nulled)
	if !ok {
		t.Fatalf("%v is not JSON once its markers are null", nulled)
	}
	return b, at
}

// roundTrip checks that the JSON text, its nulls made markers, is stored
// and read back to a value stored the same way again.
func roundTrip(t testing.TB, text string) {
	t.Helper()
	v, err := value.DecodeOrdered([]byte(text), value.Limits{MaxBytes: 1 << 20, MaxDepth: 64})
	if err != nil {
		return
	}
	marked := nullsMarked(v)
	b, at := stored(t, marked)
	back, err := value.DecodeOrdered(b, value.Limits{MaxBytes: len(b) + 1, MaxDepth: 128})
	if err != nil {
		t.Fatalf("stored %s does not decode: %v", b, err)
	}
	if back, err = Remark(back, at); err != nil {
		t.Fatalf("Remark(%s, %q): %v", b, at, err)
	}
	b2, at2 := stored(t, back)
	if !bytes.Equal(b, b2) || !slices.Equal(at, at2) {
		t.Errorf("%s: stored %s %q, read back and stored again %s %q", text, b, at, b2, at2)
	}
}

func TestMarksReadBackInPlace(t *testing.T) {
	t.Parallel()
	zeta := value.NewObject(3)
	zeta.Set("zeta", 1.0)
	zeta.Set("due", empty)
	zeta.Set("a~/b", []any{empty, 2.0})
	for _, c := range []struct {
		name string
		v    any
		json string
		at   []string
	}{
		{"the marker itself", empty, `null`, []string{""}},
		{"no marker", map[string]any{"a": 1.0}, `{"a":1}`, nil},
		{"an element", []any{1.0, empty}, `[1,null]`, []string{"/1"}},
		{"a member of a map, in Keys order", map[string]any{"b": empty, "a": []any{empty}}, `{"a":[null],"b":null}`, []string{"/a/0", "/b"}},
		{"a built object's members keep their place", zeta, `{"zeta":1,"due":null,"a~/b":[null,2]}`, []string{"/due", "/a~0~1b/0"}},
	} {
		b, at := stored(t, c.v)
		if string(b) != c.json || !slices.Equal(at, c.at) {
			t.Errorf("%s: stored %s %q, want %s %q", c.name, b, at, c.json, c.at)
		}
		roundTrip(t, c.json)
	}
	if _, at := Marks(zeta); zeta.Len() != 3 || len(at) != 2 {
		t.Fatal("Marks changed its argument")
	}
	if v, _ := zeta.Get("due"); !isEmpty(v) {
		t.Errorf("Marks changed its argument's member to %v", v)
	}
}

func TestRemarkRefusesPointersThatNameNothing(t *testing.T) {
	t.Parallel()
	for _, ptr := range []string{"a", "/x", "/a/2", "/a/-1", "/a/b", "/n/0"} {
		v := map[string]any{"a": []any{nil, 1.0}, "n": 1.0}
		if _, err := Remark(v, []string{ptr}); err == nil {
			t.Errorf("Remark at %q: no error", ptr)
		}
	}
}

// FuzzMarks: any JSON text whose nulls are markers is stored and read
// back as it was, and Remark never panics on a pointer it is given.
func FuzzMarks(f *testing.F) {
	for _, s := range []string{`null`, `[1,null]`, `{"zeta":1,"due":null,"a~/b":[null,2]}`, `{"10":null,"9":[[null]],"":{"~":null}}`} {
		f.Add(s, "/a/0")
	}
	f.Fuzz(func(t *testing.T, text, ptr string) {
		roundTrip(t, text)
		if v, err := value.DecodeOrdered([]byte(text), value.Limits{MaxBytes: 1 << 20, MaxDepth: 64}); err == nil {
			_, _ = Remark(v, []string{ptr})
		}
	})
}
