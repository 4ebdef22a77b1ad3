package query

import (
	"reflect"
	"strconv"
	"testing"
)

// The series operators answer rows that are built as records only when
// something reads them: a guard that counts them builds none.

// TestSeriesCountBuildsNoRecords holds the series guards of
// BenchmarkSeriesGuard to a few allocations per evaluation, however many
// rows they answer (96 for rolling).
func TestSeriesCountBuildsNoRecords(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items at random")
	}
	ctx := seriesBenchContext()
	for _, bc := range seriesBenchCases {
		q, err := Compile(mustJSON(t, bc.doc), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() {
			if ok, err := q.EBV(ctx, nil); err != nil || !ok {
				t.Fatal(bc.name, ok, err)
			}
		}); n > 8 {
			t.Errorf("%s: %v allocations per evaluation, want at most 8", bc.name, n)
		}
	}
}

// TestSeriesRowsReadAfterCount counts a bound answer, then reads it: the
// records built late are the ones the operator answers, every time,
// whatever order the rows come in.
func TestSeriesRowsReadAfterCount(t *testing.T) {
	t.Parallel()
	sorted := `{"readings": [{"at": 0, "value": 1}, {"at": 1800000, "value": 3}, {"at": 7200000, "value": 6}],
		"trades": [{"at": 60000, "value": 1}, {"at": 7200000, "value": 2}],
		"quotes": [{"at": 0, "value": 10}, {"at": 3600000, "value": null}]}`
	shuffled := `{"readings": [{"at": 7200000, "value": 6}, {"at": 0, "value": 1}, {"at": 1800000, "value": 3}],
		"trades": [{"at": 7200000, "value": 2}, {"at": 60000, "value": 1}],
		"quotes": [{"at": 3600000, "value": null}, {"at": 0, "value": 10}]}`
	quote := map[string]any{"at": 0.0, "value": 10.0}
	cases := []struct {
		name, expr string
		want       []any
	}{
		{"resample", `{"$resample": ["$.readings", {"every": "PT1H", "fill": "linear"}]}`, []any{
			map[string]any{"at": 0.0, "value": 2.0, "count": 2.0},
			map[string]any{"at": 3600000.0, "value": 4.0, "count": 0.0},
			map[string]any{"at": 7200000.0, "value": 6.0, "count": 1.0},
		}},
		{"rolling", `{"$rolling": ["$.readings", {"width": "PT1H", "aggregate": "sum"}]}`, []any{
			map[string]any{"at": 0.0, "value": 1.0, "count": 1.0},
			map[string]any{"at": 1800000.0, "value": 4.0, "count": 2.0},
			map[string]any{"at": 7200000.0, "value": 6.0, "count": 1.0},
		}},
		{"asof", `{"$asof": ["$.trades", "$.quotes", {"tolerance": "PT10M"}]}`, []any{
			map[string]any{"left": map[string]any{"at": 60000.0, "value": 1.0}, "right": quote, "distance": 60000.0},
			map[string]any{"left": map[string]any{"at": 7200000.0, "value": 2.0}, "right": nil, "distance": nil},
		}},
	}
	for _, c := range cases {
		doc := `{"$let": {"r": ` + c.expr + `}, "$where": {"$eq": [{"$count": "$r"}, ` +
			strconv.Itoa(len(c.want)) + `]}, "$return": "$r"}`
		q, err := Compile(mustJSON(t, doc), Options{})
		if err != nil {
			t.Fatal(c.name, err)
		}
		for i := range 20 {
			data := sorted
			if i%2 == 1 {
				data = shuffled
			}
			got, err := q.Items(mustJSON(t, data), nil)
			if err != nil {
				t.Fatal(c.name, err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("%s, round %d: got %v, want %v", c.name, i, got, c.want)
			}
		}
	}
}
