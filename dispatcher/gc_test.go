package dispatcher

import (
	"errors"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/jetflow/jetflow/natstest"
)

func TestGCPercent(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, GCMaxPercent},
		{4 << 20, GCMaxPercent},
		{GCHeadroom / 4, GCMaxPercent},
		{GCHeadroom / 2, 200},
		{GCHeadroom, 100},
		{10 * GCHeadroom, 100},
	} {
		if got := gcPercent(c.live); got != c.want {
			t.Errorf("gcPercent(%d) = %d, want %d", c.live, got, c.want)
		}
	}
}

// TestTuneGC: the tuner re-tunes after each collection; not parallel, as
// it changes the process's collector.
func TestTuneGC(t *testing.T) {
	if TuneGC(true) {
		t.Fatal("TuneGC tuned although GOGC is set")
	}
	prev := debug.SetGCPercent(100)
	defer stopGCTuner(prev)
	if !TuneGC(false) {
		t.Fatal("TuneGC did not tune")
	}
	if !TuneGC(false) {
		t.Fatal("TuneGC did not report tuning when called again")
	}
	before := gcTuner.cycles.Load()
	natstest.WaitFor(t, 10*time.Second, "two re-tunings", func() error {
		runtime.GC()
		if gcTuner.cycles.Load() < before+2 {
			return errors.New("not yet")
		}
		return nil
	})
	if got, want := debug.SetGCPercent(GCMaxPercent), gcPercent(liveHeap()); got != want {
		t.Errorf("GOGC %d, want %d for a live heap of %d bytes", got, want, liveHeap())
	}
}
