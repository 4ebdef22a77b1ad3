package query

import (
	"bytes"
	"math"
	"reflect"
	"testing"

	"github.com/jetflow/jetflow/engine/value"
)

// notJSON are what nullsMarked puts in place of nulls, in turn.
var notJSON = []any{empty, math.NaN(), math.Inf(1), math.Inf(-1)}

// nullsMarked is v with every null replaced by the empty marker, NaN or
// an infinity in turn (n counts them), in fresh containers.
func nullsMarked(v any, n *int) any {
	switch x := v.(type) {
	case nil:
		*n++
		return notJSON[*n%len(notJSON)]
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = nullsMarked(e, n)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range value.Keys(x) {
			out[k] = nullsMarked(x[k], n)
		}
		return out
	case *value.Object:
		out := value.NewObject(x.Len())
		for i := range x.Len() {
			k, e := x.At(i)
			out.Set(k, nullsMarked(e, n))
		}
		return out
	}
	return v
}

// stored is what a record keeps of a value JSON cannot hold: its JSON
// with null for each marker, NaN or infinity, in member order, and
// their pointers.
func stored(t testing.TB, v any) ([]byte, Pointers) {
	t.Helper()
	nulled, p := Marks(v)
	b, ok := value.AppendGoJSONOrdered(nil, nulled)
	if !ok {
		t.Fatalf("%v is not JSON once what JSON cannot hold is null", nulled)
	}
	return b, p
}

// roundTrip checks that the JSON text, its nulls made markers, is stored
// and read back to a value stored the same way again.
func roundTrip(t testing.TB, text string) {
	t.Helper()
	v, err := value.DecodeOrdered([]byte(text), value.Limits{MaxBytes: 1 << 20, MaxDepth: 64})
	if err != nil {
		return
	}
	n := 0
	marked := nullsMarked(v, &n)
	b, at := stored(t, marked)
	back, err := value.DecodeOrdered(b, value.Limits{MaxBytes: len(b) + 1, MaxDepth: 128})
	if err != nil {
		t.Fatalf("stored %s does not decode: %v", b, err)
	}
	if back, err = Remark(back, at); err != nil {
		t.Fatalf("Remark(%s, %q): %v", b, at, err)
	}
	b2, at2 := stored(t, back)
	if !bytes.Equal(b, b2) || !reflect.DeepEqual(at, at2) {
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
		p    Pointers
	}{
		{"the marker itself", empty, `null`, Pointers{At: []string{""}}},
		{"no marker", map[string]any{"a": 1.0}, `{"a":1}`, Pointers{}},
		{"an element", []any{1.0, empty}, `[1,null]`, Pointers{At: []string{"/1"}}},
		{"a member of a map, in Keys order", map[string]any{"b": empty, "a": []any{empty}}, `{"a":[null],"b":null}`, Pointers{At: []string{"/a/0", "/b"}}},
		{"a built object's members keep their place", zeta, `{"zeta":1,"due":null,"a~/b":[null,2]}`, Pointers{At: []string{"/due", "/a~0~1b/0"}}},
		{
			"NaN and the infinities",
			[]any{math.Inf(1), map[string]any{"n": math.NaN()}, math.Inf(-1), 2.0},
			`[null,{"n":null},null,2]`,
			Pointers{NaN: []string{"/1/n"}, Inf: []string{"/0"}, NegInf: []string{"/2"}},
		},
		{"NaN itself", math.NaN(), `null`, Pointers{NaN: []string{""}}},
	} {
		b, p := stored(t, c.v)
		if string(b) != c.json || !reflect.DeepEqual(p, c.p) {
			t.Errorf("%s: stored %s %+v, want %s %+v", c.name, b, p, c.json, c.p)
		}
	}
	for _, text := range []string{`null`, `[1,null]`, `{"a":[null],"b":null}`, `{"zeta":1,"due":null,"a~/b":[null,2]}`, `[null,{"n":null},null,null,2]`} {
		roundTrip(t, text)
	}
	if _, p := Marks(zeta); zeta.Len() != 3 || len(p.At) != 2 {
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
		if _, err := Remark(v, Pointers{NaN: []string{ptr}}); err == nil {
			t.Errorf("Remark at %q: no error", ptr)
		}
	}
}

// FuzzMarks: any JSON text whose nulls are markers, NaN or infinities is
// stored and read back as it was, and Remark never panics on a pointer it is given.
func FuzzMarks(f *testing.F) {
	for _, s := range []string{`null`, `[1,null]`, `{"zeta":1,"due":null,"a~/b":[null,2]}`, `{"10":null,"9":[[null]],"":{"~":null}}`} {
		f.Add(s, "/a/0")
	}
	f.Fuzz(func(t *testing.T, text, ptr string) {
		roundTrip(t, text)
		if v, err := value.DecodeOrdered([]byte(text), value.Limits{MaxBytes: 1 << 20, MaxDepth: 64}); err == nil {
			_, _ = Remark(v, Pointers{At: []string{ptr}})
		}
	})
}
