package query

import (
	"reflect"
	"strconv"
	"testing"
)

// TestLocatedWalkGrowsOnce checks that a located walk through a wildcard
// or a slice answers every location in order, and sizes its result
// lists once for the selector instead of doubling them up from nothing
// (a JSLT $apply over an array of a hundred items allocated about thirty
// times for its locations).
func TestLocatedWalkGrowsOnce(t *testing.T) {
	items := make([]any, 100)
	for i := range items {
		items[i] = float64(i)
	}
	root := map[string]any{"a": items}
	for _, c := range []struct {
		path  string
		index func(n int) []int
	}{
		{"$.a[*]", func(n int) []int { return stride(0, n, 1) }},
		{"$.a[1:90:3]", func(int) []int { return stride(1, 90, 3) }},
		{"$.a[::-2]", func(n int) []int { return stride(n-1, -1, -2) }},
		{"$.a[80:10:-7]", func(int) []int { return stride(80, 10, -7) }},
	} {
		t.Run(c.path, func(t *testing.T) {
			p := parsePath(c.path, c.path, "")
			vals, rel := p.selectLocated(root, root)
			want := c.index(len(items))
			if len(vals) != len(want) || len(rel) != len(want) {
				t.Fatalf("%d values, %d locations, want %d", len(vals), len(rel), len(want))
			}
			for k, i := range want {
				if vals[k] != items[i] || !reflect.DeepEqual(rel[k], []Seg{{Name: "a", Index: -1}, {Index: i}}) {
					t.Fatalf("result %d: %v at %v, want %v at a/%d", k, vals[k], rel[k], items[i], i)
				}
			}
			if raceEnabled {
				return // the race detector's instrumentation allocates
			}
			// the step to "a", walked without lists (1), then the last
			// segment's three (values, locations, slab) grown once; the
			// starting lists and the lists of "a" made 8, before
			if n := testing.AllocsPerRun(20, func() { p.selectLocated(root, root) }); n > 4 {
				t.Errorf("%v allocations per walk, want at most 4", n)
			}
		})
	}
}

// stride is from, from+step, … up to to, exclusive.
func stride(from, to, step int) []int {
	var out []int
	for i := from; (step > 0 && i < to) || (step < 0 && i > to); i += step {
		out = append(out, i)
	}
	return out
}

// TestLoneForSizesItsAnswer checks that a FLWOR with one $for collects
// its answers into a list sized once, from its source's items (an
// array's members counted one by one), and answers them all, in order.
func TestLoneForSizesItsAnswer(t *testing.T) {
	people := make([]any, 200)
	for i := range people {
		people[i] = map[string]any{"name": "p" + strconv.Itoa(i), "age": float64(i % 40)}
	}
	data := map[string]any{"people": people}
	for _, c := range []struct {
		doc    string
		allocs float64 // the answer grown once; growing it by doubling took 7 more
	}{
		{`{"$for": {"p": "$.people[*]"}, "$where": {"$ge": ["$p.age", 18]}, "$return": "$p.name"}`, 7},
		{`{"$for": {"p": "$.people"}, "$let": {"a": "$p.age"}, "$where": {"$ge": ["$a", 18]}, "$return": "$p.name"}`, 5},
	} {
		t.Run(c.doc, func(t *testing.T) {
			var want []any
			for i := range people {
				if i%40 >= 18 {
					want = append(want, "p"+strconv.Itoa(i))
				}
			}
			checkItems(t, c.doc, data, want, c.allocs)
		})
	}
}

// TestPathAndArrayMadeOnce checks that a path through a wildcard answers
// the list its last segment selected, not a copy of it, and that an
// array constructor makes its array at its size, a sequence element
// included: each answers in order and allocates what it answers.
func TestPathAndArrayMadeOnce(t *testing.T) {
	items := make([]any, 50)
	for i := range items {
		items[i] = map[string]any{"n": float64(i)}
	}
	data := map[string]any{"a": items}
	for _, c := range []struct {
		doc    string
		want   func() []any
		allocs float64
	}{
		// the selected list and the sequence holding it; before, the list
		// of "a" and a copy of the selected one besides
		{`"$.a[*]"`, func() []any { return items }, 2},
		// the wildcard's list, the names' list made at its size, the
		// sequence; before, the list of "a" besides, and the names' list
		// grown by doubling and copied
		{`"$.a[*].n"`, func() []any {
			out := make([]any, len(items))
			for i := range items {
				out[i] = float64(i)
			}
			return out
		}, 3},
		// the array of 52 and its box, the path's list and sequence, the
		// list Items answers; before, the list of "a" and a copy of the
		// path's list besides, and the array grown from three to 52
		{`[1, "$.a[*]", 2]`, func() []any { return append(append([]any{1.0}, items...), 2.0) }, 5},
	} {
		t.Run(c.doc, func(t *testing.T) {
			want := c.want()
			if c.doc[0] == '[' {
				want = []any{want} // one item, the array
			}
			checkItems(t, c.doc, data, want, c.allocs)
		})
	}
}

// TestShortArraysShareChunks checks that an evaluation that builds many
// short arrays (a $return of one per tuple) answers each as its own
// array, capped at its length so that appending to one cannot write into
// the next, and after the first few cuts them from shared chunks.
func TestShortArraysShareChunks(t *testing.T) {
	people := make([]any, 40)
	for i := range people {
		people[i] = map[string]any{"name": "p" + strconv.Itoa(i)}
	}
	data := map[string]any{"people": people}
	q, err := Compile(mustJSON(t, `{"$for": {"p": "$.people[*]"}, "$return": ["li", {}, "$p.name"]}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := q.Items(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(people) {
		t.Fatalf("%d items, want %d", len(got), len(people))
	}
	for i, item := range got {
		arr := item.([]any)
		want := []any{"li", map[string]any{}, "p" + strconv.Itoa(i)}
		if !reflect.DeepEqual(arr, want) || cap(arr) != len(arr) {
			t.Fatalf("item %d: %v (cap %d), want %v at its length", i, arr, cap(arr), want)
		}
		_ = append(arr, "x") // must not reach the next array
	}
	for i, item := range got {
		if s := item.([]any)[2]; s != "p"+strconv.Itoa(i) {
			t.Fatalf("item %d holds %v after the appends", i, s)
		}
	}
	if raceEnabled {
		return // the race detector makes sync.Pool drop items at random
	}
	// 51: the four arrays made on their own, the other 36 cut from two
	// chunks, each array's box (40), and the path's and the phrase's
	// lists and sequences; 85 when each array was made on its own
	if n := testing.AllocsPerRun(20, func() { _, _ = q.Items(data, nil) }); n > 51 {
		t.Errorf("%v allocations per evaluation, want at most 51", n)
	}
}

// checkItems compiles doc, checks that it answers want over data, and,
// without the race detector, that it allocates at most allocs per
// evaluation.
func checkItems(t *testing.T, doc string, data any, want []any, allocs float64) {
	t.Helper()
	q, err := Compile(mustJSON(t, doc), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := q.Items(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if raceEnabled {
		return // the race detector makes sync.Pool drop items at random
	}
	if n := testing.AllocsPerRun(20, func() { _, _ = q.Items(data, nil) }); n > allocs {
		t.Errorf("%v allocations per evaluation, want at most %v", n, allocs)
	}
}
