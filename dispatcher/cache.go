package dispatcher

import (
	"slices"
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
	// acked: the ids of rec.Outbox's messages the streams acknowledged
	// in a flush that failed (publisher.publishRest); nil when none did.
	acked map[string]bool
	// st is rec.State decoded, when known (states are immutable).
	st *run.State
	// doubted: a write of this run failed after rec was cached, and may
	// have been stored, so rec may no longer be the stored record. get
	// does not return it; it only tells load that this process published
	// the outbox of revision rev (publishedAt).
	doubted bool
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
	if !ok || e.doubted {
		return cached{}, false
	}
	return e, true
}

// doubt stops get from returning the run's entry, after a write of the
// run that may or may not have been stored: the next step reads the
// record from the store.
func (c *recordCache) doubt(runID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[runID]; ok {
		e.doubted = true
		c.m[runID] = e
	}
}

// publishedAt reports whether this process published the outbox of rec,
// the run's record read from the store at revision rev: its entry, even a
// doubted one, holds that revision with that outbox and has published it.
// A reload after a failed write then does not publish the outbox again:
// Nats-Msg-Id would not always drop the copies, since a server that
// restarted has rebuilt its duplicate window from the messages it still
// stores, and an invocation a worker acknowledged (the task stream is a
// work queue) or a schedule that fired is no longer stored. Such a copy
// would run the task attempt again, or fire the timer again.
func (c *recordCache) publishedAt(runID string, rev uint64, rec *runrecord.Record) bool {
	if c.max <= 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[runID]
	return ok && e.published && e.rev == rev && sameOutbox(e.rec.Outbox, rec.Outbox)
}

// ackedAt returns the ids of rec's outbox messages that this process's
// failed flush of revision rev had stored (nil when none), which a later
// flush does not publish again, for the reason publishedAt gives.
func (c *recordCache) ackedAt(runID string, rev uint64, rec *runrecord.Record) map[string]bool {
	if c.max <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[runID]
	if !ok || e.rev != rev || !sameOutbox(e.rec.Outbox, rec.Outbox) {
		return nil
	}
	return e.acked
}

// sameOutbox reports whether a and b list the same messages (by id, kind
// and subject): a bucket created anew numbers its revisions from 1
// again.
func sameOutbox(a, b []runrecord.Outgoing) bool {
	return slices.EqualFunc(a, b, func(x, y runrecord.Outgoing) bool {
		return x.ID == y.ID && x.Kind == y.Kind && x.Subject == y.Subject
	})
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
