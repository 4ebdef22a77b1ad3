package registry

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// LatestIndex follows every workflow's revision list with one KV watch,
// so that the latest revision of a name is known without a read. It lags
// the bucket by the time a change takes to reach the watch: a start
// published right after a deploy may still see the previous revision
// (as a read from a lagging replica could).
type LatestIndex struct {
	w    jetstream.KeyWatcher
	done chan struct{}

	mu     sync.RWMutex
	latest map[string]RevisionRef
	ready  bool // every value present when the watch began has arrived
}

// WatchLatest starts following the revision lists. Stop the index when
// done; ctx only bounds the start.
func (r *Registry) WatchLatest(ctx context.Context) (*LatestIndex, error) {
	// The watch lives until Stop, not until ctx ends.
	w, err := r.b.KV().Watch(context.WithoutCancel(ctx), nameKeyPrefix+jetstream.AllKeys)
	if err != nil {
		return nil, fmt.Errorf("registry: watch the workflow revisions in bucket %q: %w", r.b.Name(), err)
	}
	x := &LatestIndex{w: w, done: make(chan struct{}), latest: make(map[string]RevisionRef)}
	go x.follow()
	return x, nil
}

func (x *LatestIndex) follow() {
	defer close(x.done)
	defer func() {
		// Closed (by Stop, or with the connection): know nothing rather
		// than something stale, so that readers read.
		x.mu.Lock()
		x.ready = false
		x.mu.Unlock()
	}()
	// The watcher's callback blocks on a full channel: read until it is
	// closed, which Stop causes.
	for e := range x.w.Updates() {
		if e == nil {
			x.mu.Lock()
			x.ready = true
			x.mu.Unlock()
			continue
		}
		name := strings.TrimPrefix(e.Key(), nameKeyPrefix)
		idx, err := decodeIndex(e.Value())
		x.mu.Lock()
		if e.Operation() != jetstream.KeyValuePut || err != nil {
			// Deleted, or unreadable: readers fall back to a read, which
			// reports what is wrong.
			delete(x.latest, name)
		} else {
			x.latest[name] = idx.Revisions[len(idx.Revisions)-1]
		}
		x.mu.Unlock()
	}
}

// Latest returns name's latest revision as last seen by the watch; ok is
// false when the watch has not seen the name (or not caught up yet): read
// it with Registry.Latest then.
func (x *LatestIndex) Latest(name string) (ref RevisionRef, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if !x.ready {
		return RevisionRef{}, false
	}
	ref, ok = x.latest[name]
	return ref, ok
}

// Stop ends the watch and waits for its goroutine. It is safe to call
// more than once.
func (x *LatestIndex) Stop() {
	_ = x.w.Stop()
	<-x.done
}
