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
