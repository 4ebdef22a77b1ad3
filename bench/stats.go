package bench

import (
	"slices"
	"time"
)

// Latency is a latency distribution in milliseconds.
type Latency struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_ms"`
	P90 float64 `json:"p90_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

// latencyOf summarises samples (nearest-rank percentiles).
func latencyOf(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	at := func(p float64) float64 {
		i := int(p*float64(len(s))+0.999999) - 1
		i = max(0, min(i, len(s)-1))
		return ms(s[i])
	}
	return Latency{N: len(s), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: ms(s[len(s)-1])}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
