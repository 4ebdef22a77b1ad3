package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jetflow/jetflow/payload"
)

// inlinePayloadSize is the body of the large-payload scenario's inline
// runs: half the default threshold, so that the start, the invocation,
// the result and the record's values all travel inline.
const inlinePayloadSize = payload.DefaultThreshold / 2

// PayloadReport is the large-payload scenario's figures: runs one at a
// time whose input and result are each the size given, by reference and
// inline.
type PayloadReport struct {
	ByRef  PayloadRuns `json:"by_reference"`
	Inline PayloadRuns `json:"inline"`
}

// PayloadRuns are the runs of one body size.
type PayloadRuns struct {
	// Size is the bytes of each input and of each result.
	Size int `json:"size"`
	Runs int `json:"runs"`
	// MBPerSec is the input and result bytes of every run (2 × Size ×
	// Runs, in MiB) over the sum of their start-to-done times.
	MBPerSec float64 `json:"mb_per_sec"`
	Latency  Latency `json:"latency"`
}

// largePayload measures the scenario: PayloadRuns runs at PayloadSize,
// then as many at inlinePayloadSize, one at a time, after one unmeasured
// run of each.
func (r *runner) largePayload(ctx context.Context, w workload) (ScenarioReport, error) {
	rep := ScenarioReport{Scenario: LargePayload, Window: 1}
	pr := &PayloadReport{}
	rep.Payload = pr
	for _, c := range []struct {
		name string
		size int
		into *PayloadRuns
	}{{"r", r.cfg.PayloadSize, &pr.ByRef}, {"i", inlinePayloadSize, &pr.Inline}} {
		w := w
		w.input = strings.Repeat("0123456789abcdef", c.size/16)
		r.progress("%s: %d runs of %d bytes in and out, one at a time", LargePayload, r.cfg.PayloadRuns, c.size)
		if _, err := r.drv.one(ctx, w, fmt.Sprintf("%s-%s-w", w.code, c.name)); err != nil {
			return rep, err
		}
		var lat []time.Duration
		var sum time.Duration
		for i := range r.cfg.PayloadRuns {
			d, err := r.drv.one(ctx, w, fmt.Sprintf("%s-%s-%d", w.code, c.name, i))
			if err != nil {
				return rep, err
			}
			lat, sum = append(lat, d), sum+d
		}
		*c.into = PayloadRuns{
			Size: c.size, Runs: len(lat), Latency: latencyOf(lat),
			MBPerSec: 2 * float64(c.size) * float64(len(lat)) / (1 << 20) / sum.Seconds(),
		}
		rep.Runs += len(lat)
		r.progress("%s: %.1f MB/s at %d bytes", LargePayload, c.into.MBPerSec, c.size)
	}
	return rep, nil
}
