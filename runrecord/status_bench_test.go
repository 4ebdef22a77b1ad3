package runrecord

import (
	"encoding/json"
	"testing"

	"github.com/jetflow/jetflow/wire"
)

func BenchmarkStatus(b *testing.B) {
	data := []byte(`{"run":"r1","workflow":"one","revision":"one/1","status":"done","state":"/states/done","result":{"ok":true,"reserved":["a-1","b-7"],"at":"2026-12-04T10:00:00Z"},"time":1796183856843}`)
	b.Run("parse", func(b *testing.B) {
		for b.Loop() {
			if _, ok := parseStatus(data); !ok {
				b.Fatal("slow path")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var s *wire.Status
			if err := json.Unmarshal(data, &s); err != nil {
				b.Fatal(err)
			}
		}
	})
}
