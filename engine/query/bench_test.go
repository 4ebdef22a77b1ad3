package query

import (
	"syscall"
	"testing"
)

// BenchmarkGuard measures typical statechart guards on a small context.
func BenchmarkGuard(b *testing.B) {
	data := map[string]any{"context": map[string]any{"data": map[string]any{"ready": true, "n": 3.0}}}
	for _, bc := range []struct {
		name string
		doc  any
		ctx  any
	}{
		{"gt", map[string]any{"$gt": []any{"$.context.data", 2.0}}, map[string]any{"context": map[string]any{"data": 3.0}}},
		{"path", "$.context.data.ready", data},
	} {
		b.Run(bc.name, func(b *testing.B) {
			q, err := Compile(bc.doc, Options{})
			if err != nil {
				b.Fatal(err)
			}
			benchEBV(b, q, bc.ctx)
		})
	}
}

// dateBenchCases are the date guards conformance/bench-query.mjs times on
// the reference, so the two figures compare one evaluation each.
var dateBenchCases = []struct {
	name string
	doc  string
}{
	{"epoch", `{"$lt": [{"$epoch": "$.context.data.due"}, 1700000000000]}`},
	{"add", `{"$lt": [{"$date-add": ["$.context.data.due", 1, "month"]}, "2024"]}`},
	{"diff", `{"$ge": [{"$date-diff": ["$.context.data.due", "2024-01-01T00:00:00+02:00", "day"]}, 30]}`},
	{"format", `{"$eq": [{"$date-format": ["$.context.data.due", "yyyy-MM"]}, "2023-11"]}`},
}

// BenchmarkDateGuard measures guards over an RFC 3339 member.
func BenchmarkDateGuard(b *testing.B) {
	ctx := map[string]any{"context": map[string]any{"data": map[string]any{"due": "2023-11-14T22:13:19.999+00:00"}}}
	for _, bc := range dateBenchCases {
		b.Run(bc.name, func(b *testing.B) {
			q, err := Compile(mustJSON(b, bc.doc), Options{})
			if err != nil {
				b.Fatal(err)
			}
			benchEBV(b, q, ctx)
		})
	}
}

// seriesBenchCases are the series guards conformance/bench-query.mjs
// times on the reference, over the same context (seriesBenchContext).
var seriesBenchCases = []struct {
	name string
	doc  string
}{
	{"bucket", `{"$lt": [{"$time-bucket": ["$.context.data.due", "PT1H"]}, 1700000000000]}`},
	{"bucket-month", `{"$lt": [{"$time-bucket": ["$.context.data.due", "P1M", null, {"offset": 120}]}, 1700000000000]}`},
	{"resample", `{"$eq": [{"$count": {"$resample": ["$.context.data.readings", {"every": "PT1H", "fill": "linear"}]}}, 24]}`},
	{"rolling", `{"$eq": [{"$count": {"$rolling": ["$.context.data.readings", {"width": "PT1H", "aggregate": "max"}]}}, 96]}`},
	{"asof", `{"$eq": [{"$count": {"$asof": ["$.context.data.trades", "$.context.data.readings", {"tolerance": "PT10M"}]}}, 24]}`},
}

// seriesBenchContext is 96 quarter-hourly readings (every tenth a gap)
// and 24 hourly trades, built as bench-query.mjs builds them.
func seriesBenchContext() any {
	readings := make([]any, 96)
	for i := range readings {
		var v any = float64(i%7) * 0.5
		if i%10 == 9 {
			v = nil
		}
		readings[i] = map[string]any{"at": float64(i) * 900000, "value": v}
	}
	trades := make([]any, 24)
	for i := range trades {
		trades[i] = map[string]any{"at": float64(i)*3600000 + 60000, "value": float64(i)}
	}
	return map[string]any{"context": map[string]any{"data": map[string]any{
		"due": "2023-11-14T22:13:19.999+00:00", "readings": readings, "trades": trades,
	}}}
}

// BenchmarkSeriesGuard measures guards over the §8.16 operators.
func BenchmarkSeriesGuard(b *testing.B) {
	ctx := seriesBenchContext()
	for _, bc := range seriesBenchCases {
		b.Run(bc.name, func(b *testing.B) {
			q, err := Compile(mustJSON(b, bc.doc), Options{})
			if err != nil {
				b.Fatal(err)
			}
			benchEBV(b, q, ctx)
		})
	}
}

// spatialBenchContext is the context conformance/bench-query.mjs builds
// for the spatial guards: a position, a region with a hole, a route, a
// WKT column and a cell.
const spatialBenchContext = `{"context": {"data": {
	"at": [4.9, 52.37], "home": [5.12, 52.09],
	"region": {"type": "Feature", "properties": {"name": "west"}, "geometry": {"type": "Polygon", "coordinates": [
		[[3, 50], [8, 50], [8, 54], [3, 54], [3, 50]],
		[[6, 51], [7, 51], [7, 52], [6, 52], [6, 51]]]}},
	"route": {"type": "LineString", "coordinates": [[4.88, 52.36], [4.89, 52.365], [4.9, 52.37], [4.91, 52.372],
		[4.92, 52.371], [4.95, 52.36], [4.99, 52.34], [5.05, 52.3], [5.1, 52.2], [5.12, 52.09]]},
	"wkt": "POLYGON ((3 50, 8 50, 8 54, 3 54, 3 50), (6 51, 7 51, 7 52, 6 52, 6 51))",
	"cell": "u173zt"}}}`

// spatialBenchCases are the spatial guards bench-query.mjs times on the
// reference, one per operator of §8.14.
var spatialBenchCases = []struct {
	name string
	doc  string
}{
	{"bbox", `{"$eq": [{"$bbox": "$.context.data.region"}, [3, 50, 8, 54]]}`},
	{"area", `{"$gt": [{"$area": "$.context.data.region"}, 1e10]}`},
	{"length", `{"$gt": [{"$length": "$.context.data.route"}, 1000]}`},
	{"centroid", `{"$exists": {"$centroid": "$.context.data.region"}}`},
	{"distance", `{"$lt": [{"$distance": ["$.context.data.at", "$.context.data.home"]}, 50000]}`},
	{"within", `{"$within": ["$.context.data.at", "$.context.data.region"]}`},
	{"bbox-intersects", `{"$bbox-intersects": ["$.context.data.route", "$.context.data.region"]}`},
	{"geohash", `{"$eq": [{"$geohash": ["$.context.data.at", 6]}, "u173zt"]}`},
	{"geo-parse", `{"$exists": {"$geo-parse": "$.context.data.wkt"}}`},
	{"geo-text", `{"$eq": [{"$geo-text": "$.context.data.at"}, "POINT (4.9 52.37)"]}`},
	{"geohash-bounds", `{"$exists": {"$geohash-bounds": "$.context.data.cell"}}`},
	{"geohash-neighbours", `{"$eq": [{"$count": {"$geohash-neighbours": "$.context.data.cell"}}, 9]}`},
	{"geo-simplify", `{"$exists": {"$geo-simplify": ["$.context.data.route", 0.01]}}`},
}

// BenchmarkSpatialGuard measures one guard per spatial operator.
func BenchmarkSpatialGuard(b *testing.B) {
	ctx := mustJSON(b, spatialBenchContext)
	for _, bc := range spatialBenchCases {
		b.Run(bc.name, func(b *testing.B) {
			q, err := Compile(mustJSON(b, bc.doc), Options{})
			if err != nil {
				b.Fatal(err)
			}
			benchEBV(b, q, ctx)
		})
	}
}

// BenchmarkPathFilter measures JSONPath filters over 50 items: an
// existence test, comparisons and match() with a literal pattern.
func BenchmarkPathFilter(b *testing.B) {
	items := make([]any, 50)
	for i := range items {
		items[i] = map[string]any{"n": float64(i % 5), "s": "abc", "ok": i%2 == 0}
	}
	data := map[string]any{"items": items}
	for _, bc := range []struct{ name, path string }{
		{"exists", "$.items[?@.ok]"},
		{"compare", "$.items[?@.n >= 2 && @.s == 'abc']"},
		{"match", "$.items[?match(@.s, 'a.*')]"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			q, err := Compile(map[string]any{"$gt": []any{map[string]any{"$count": bc.path}, 0.0}}, Options{})
			if err != nil {
				b.Fatal(err)
			}
			benchEBV(b, q, data)
		})
	}
}

// benchEBV times q.EBV(ctx), which must hold, and reports the CPU time
// per evaluation beside the wall time: on a loaded machine the CPU time
// is the figure to compare with bench-query.mjs's.
func benchEBV(b *testing.B, q *Query, ctx any) {
	b.Helper()
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		ok, err := q.EBV(ctx, nil)
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// cpuTime returns the CPU time the process has used, in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkBuiltObject measures queries that build objects at run time:
// a result built by $map or $from-entries (made a map as it leaves the
// evaluation), one walked inside the query, and a plain constructor.
func BenchmarkBuiltObject(b *testing.B) {
	data := map[string]any{"a": 1.0, "b": "two"}
	pairs := []any{[]any{"zeta", "$.a"}, []any{"alpha", "$.b"}, []any{"mid", 1.0}}
	entries := []any{
		map[string]any{"key": "zeta", "value": "$.a"},
		map[string]any{"key": "alpha", "value": "$.b"},
		map[string]any{"key": "mid", "value": 1.0},
	}
	for _, bc := range []struct {
		name string
		doc  any
		ebv  bool
	}{
		{"map-result", map[string]any{"$map": pairs}, false},
		{"from-entries-result", map[string]any{"$from-entries": map[string]any{"$seq": entries}}, false},
		{"map-walked", map[string]any{"$eq": []any{map[string]any{"$count": map[string]any{"$entries": map[string]any{"$map": pairs}}}, 3.0}}, true},
		{"constructor-result", map[string]any{"zeta": "$.a", "alpha": "$.b", "mid": 1.0}, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			q, err := Compile(bc.doc, Options{})
			if err != nil {
				b.Fatal(err)
			}
			if bc.ebv {
				benchEBV(b, q, data)
				return
			}
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				if _, ok, err := q.Eval(data, nil); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}
