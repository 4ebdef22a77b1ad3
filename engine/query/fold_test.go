package query

import (
	"fmt"
	"reflect"
	"testing"
)

// TestConstantConstructorsAreShared checks that a constructor of
// literals is built once: every evaluation answers the same value, and a
// guard comparing with one allocates nothing.
func TestConstantConstructorsAreShared(t *testing.T) {
	t.Parallel()
	q, err := Compile(mustJSON(t, `{"k": [1, "two", null, true], "e": {}, "s": "$$x", "c": {"$const": {"$a": 1}}}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	first, _, err := q.Eval(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := q.Eval(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := mustJSON(t, `{"k": [1, "two", null, true], "e": {}, "s": "$x", "c": {"$a": 1}}`)
	if !reflect.DeepEqual(first, want) {
		t.Fatalf("got %v, want %v", first, want)
	}
	if reflect.ValueOf(first).UnsafePointer() != reflect.ValueOf(again).UnsafePointer() {
		t.Error("two evaluations built two objects, want the one built at compile time")
	}
}

// TestConstantGuardAllocatesNothing holds a guard comparing with a
// literal array to no allocation per evaluation.
func TestConstantGuardAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items at random")
	}
	q, err := Compile(mustJSON(t, `{"$eq": ["$.a", [3, 50, 8, 54]]}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	data := mustJSON(t, `{"a": [3, 50, 8, 54]}`)
	if n := testing.AllocsPerRun(200, func() {
		if ok, err := q.EBV(data, nil); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per evaluation, want 0", n)
	}
}

// TestConstantConstructorsChargeAsBuilt checks that a folded constructor
// charges the budget exactly what building it member by member charges,
// and fails at the same node with the same figures when the budget runs
// out part-way: its twin, the same constructor with one member read
// from the input (which charges the same and cannot be folded), is the
// measure.
func TestConstantConstructorsChargeAsBuilt(t *testing.T) {
	t.Parallel()
	long := "["
	for i := range 130 {
		if i > 0 {
			long += ","
		}
		long += fmt.Sprint(i)
	}
	long += "]"
	cases := []struct{ folded, twin string }{
		{`[1, [2, 3], {"a": [4]}, "x"]`, `[1, [2, 3], {"a": [4]}, "$.x"]`},
		{`{"a": {"b": {"c": [null, true, "$$d"]}}, "e": 1}`, `{"a": {"b": {"c": [null, true, "$$d"]}}, "e": "$.one"}`},
		{`[` + long + `, 0]`, `[` + long + `, "$.zero"]`},
	}
	data := mustJSON(t, `{"x": "x", "one": 1, "zero": 0}`)
	for _, c := range cases {
		t.Run(c.folded, func(t *testing.T) {
			t.Parallel()
			f, err := Compile(mustJSON(t, c.folded), Options{})
			if err != nil {
				t.Fatal(err)
			}
			w, err := Compile(mustJSON(t, c.twin), Options{})
			if err != nil {
				t.Fatal(err)
			}
			want, _, _ := w.Eval(data, nil)
			got, _, _ := f.Eval(data, nil)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("folded %v, built %v", got, want)
			}
			whole := &Budget{}
			if _, _, err := w.Within(whole).Eval(data, nil); err != nil {
				t.Fatal(err)
			}
			needSteps, needBytes := whole.Spent()
			for steps := 1; steps <= needSteps+2; steps++ {
				if steps > 5 && steps < needSteps-5 {
					continue // the budgets far from the edge say nothing new
				}
				for bytes := 1; bytes <= needBytes+20; bytes += 7 {
					fb, wb := &Budget{Steps: steps, Bytes: bytes}, &Budget{Steps: steps, Bytes: bytes}
					_, _, ferr := f.Within(fb).Eval(data, nil)
					_, _, werr := w.Within(wb).Eval(data, nil)
					if fmt.Sprint(ferr) != fmt.Sprint(werr) {
						t.Fatalf("steps %d, bytes %d: folded %v, built %v", steps, bytes, ferr, werr)
					}
					fs, fby := fb.Spent()
					ws, wby := wb.Spent()
					if fs != ws || fby != wby {
						t.Fatalf("steps %d, bytes %d: folded spent %d steps %d bytes, built %d and %d", steps, bytes, fs, fby, ws, wby)
					}
				}
			}
		})
	}
}
