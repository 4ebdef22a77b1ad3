//go:build !race

package integration

import (
	"testing"
	"time"
)

// TestFiftyMegabytesByReference: a 50 MB run input and a 50 MB task
// result end to end through the Go SDK worker (largeRun). Without -race
// only: the race detector makes hashing and copying 50 MB several times
// too slow for a test; TestLargeInputAndResultByReference takes the same
// path with 4 MB under it.
func TestFiftyMegabytesByReference(t *testing.T) {
	t.Parallel()
	e := setup(t, options{timeout: 20 * time.Minute})
	const size = 50 << 20
	took := largeRun(t, e, "big50", size, 15*time.Minute)
	// In and out: the input crossed to the worker and the result back.
	t.Logf("50 MB input and 50 MB result in %v: %.1f MB/s end to end", took.Round(time.Millisecond), 2*float64(size)/(1<<20)/took.Seconds())
}
