package dispatcher

import (
	"sync"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/runrecord"
)

// cached is a run record as this process last read or wrote it.
type cached struct {
	rec *runrecord.Record
	rev uint64
	// published: this process has published rec.Outbox.
	published bool
	// st is rec.State decoded, when known (states are immutable).
	st *run.State
}

// recordCache keeps the latest record of recently handled runs so that a
// step can skip the read (a stale entry only costs one compare-and-swap
// conflict) and knows which outboxes it has already published. Records
// are never mutated once cached.
type recordCache struct {
	mu  sync.Mutex
	max int
	m   map[string]cached
}

func newRecordCache(max int) *recordCache {
	return &recordCache{max: max, m: make(map[string]cached)}
}

func (c *recordCache) get(runID string) (cached, bool) {
	if c.max <= 0 {
		return cached{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[runID]
	return e, ok
}

func (c *recordCache) put(runID string, e cached) {
	if c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[runID]; !ok && len(c.m) >= c.max {
		// Evict an arbitrary entry: any loss is only one extra read.
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[runID] = e
}

func (c *recordCache) drop(runID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, runID)
}
