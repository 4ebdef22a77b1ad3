package dispatcher

import (
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync"
	"sync/atomic"
)

// GC tuning of the commands that run a dispatcher (jetflow serve and
// jetflow dispatcher). A dispatcher's live heap is a few MB (cached runs)
// and every step allocates, so at Go's default (GOGC=100) it collects
// after every few MB allocated, many times a second. Letting the heap grow by GCHeadroom past
// what is live, instead of by 100% of it, cut a dispatcher's CPU per
// run by about a fifth. A large heap (an embedded nats-server holding
// many streams) keeps Go's default, so the setting costs at most
// GCHeadroom of memory over it.
const (
	// GCHeadroom is how far the heap may grow past its live part before
	// the next collection, while that is more than Go's default.
	GCHeadroom = 64 << 20
	// GCMaxPercent caps the GOGC the tuner sets: 400 took the dispatcher
	// most of the way (800 saved a further 3% for 40% more memory).
	GCMaxPercent = 400
)

var gcTuner struct {
	mu      sync.Mutex
	running bool
	gen     atomic.Int64 // a cleanup of an older generation stops
	cycles  atomic.Int64
}

// TuneGC makes the collector leave GCHeadroom of heap growth between
// collections (GOGC up to GCMaxPercent while the live heap is small),
// re-tuned after every collection, unless gogcSet: the caller passes
// whether the GOGC environment variable is set, and an operator's GOGC
// wins (TuneGC then does nothing). GOMEMLIMIT, if set, still bounds the
// heap (the collector works harder as it nears the limit). Only commands
// call it, as they alone read the environment: a library leaves the
// process's collector to its owner. It reports whether it tunes; calling
// it again does nothing more.
func TuneGC(gogcSet bool) bool {
	if gogcSet {
		return false
	}
	gcTuner.mu.Lock()
	defer gcTuner.mu.Unlock()
	if !gcTuner.running {
		gcTuner.running = true
		debug.SetGCPercent(GCMaxPercent) // until the first collection measures
		armGCTuner(gcTuner.gen.Add(1))
	}
	return true
}

// gcSentinel is garbage by design: its cleanup runs once per collection
// (a pointer field keeps it out of the tiny allocator, whose blocks can
// outlive their objects).
type gcSentinel struct {
	_ *byte
	_ [8]byte
}

func armGCTuner(gen int64) {
	runtime.AddCleanup(new(gcSentinel), func(gen int64) {
		gcTuner.mu.Lock()
		defer gcTuner.mu.Unlock()
		if gcTuner.gen.Load() != gen {
			return
		}
		gcTuner.cycles.Add(1)
		debug.SetGCPercent(gcPercent(liveHeap()))
		armGCTuner(gen)
	}, gen)
}

// stopGCTuner stops re-tuning and sets GOGC to pct (tests).
func stopGCTuner(pct int) {
	gcTuner.mu.Lock()
	defer gcTuner.mu.Unlock()
	gcTuner.running = false
	gcTuner.gen.Add(1)
	debug.SetGCPercent(pct)
}

// gcPercent is the GOGC that lets a live heap of live bytes grow by
// GCHeadroom, within [100, GCMaxPercent].
func gcPercent(live uint64) int {
	if live == 0 {
		return GCMaxPercent
	}
	return int(min(max(GCHeadroom*100/live, 100), GCMaxPercent))
}

// liveHeap is the heap the last collection found live.
func liveHeap() uint64 {
	s := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(s)
	if s[0].Value.Kind() != rtmetrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
