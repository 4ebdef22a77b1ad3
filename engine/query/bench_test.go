package query

import "testing"

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
			b.ReportAllocs()
			for b.Loop() {
				ok, err := q.EBV(bc.ctx, nil)
				if err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
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
			b.ReportAllocs()
			for b.Loop() {
				ok, err := q.EBV(ctx, nil)
				if err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
	}
}
