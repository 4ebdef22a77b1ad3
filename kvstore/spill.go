package kvstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jetflow/jetflow/payload"
)

// A run record's large values are kept in the payload bucket: each JSON
// value of the record larger than the payload threshold is stored as the
// object "<run>/value/<sha256 hex>" and the record holds a reference
// object in its place (payload.Split). The run bucket's revision still
// orders every write, so compare-and-swap is unchanged; Get and GetEntry
// return the record itself, byte for byte as it was written. Names follow
// content: a value that did not change since the last save uploads
// nothing, and retention deletes a run's objects by its name prefix.

// valueCacheBytes bounds the values a RunStore keeps in memory, so that
// a step reading a run again does not download its large values again.
const valueCacheBytes = 256 << 20

// spill is the state of a RunStore that keeps large values by reference.
type spill struct {
	store *payload.Store

	mu sync.Mutex
	// stored lists the objects known to be in the bucket.
	stored map[string]struct{}
	// values caches objects' bodies, oldest first in order; size is
	// their total bytes.
	values map[string][]byte
	order  []string
	size   int
}

// WithPayloads makes the store keep record values larger than store's
// threshold in the payload bucket (see above), and read them back.
// Without it a record holding references is returned as it is stored.
// The first call wins: a later one (a dispatcher given a store its fleet
// set up) changes nothing.
func (s *RunStore) WithPayloads(store *payload.Store) *RunStore {
	s.spill.CompareAndSwap(nil, &spill{store: store, stored: map[string]struct{}{}, values: map[string][]byte{}})
	return s
}

// out returns what the run bucket stores for data: data itself when no
// value in it is larger than the threshold (no allocation), else data
// with its large values by reference, after uploading those not already
// in the bucket. It returns how long the uploads took, which the write
// that follows adds to ctx's deadline (a deadline sized for a small
// write would fail every record that uploads a large value).
func (s *RunStore) out(ctx context.Context, runID string, data []byte) ([]byte, time.Duration, error) {
	sp := s.spill.Load()
	if sp == nil {
		return data, 0, nil
	}
	began := time.Now()
	doc, vals, err := payload.Split(data, runID, sp.store.Threshold())
	if err != nil {
		return nil, 0, fmt.Errorf("kvstore: run %q: record of %d bytes: %w", runID, len(data), err)
	}
	for _, v := range vals {
		if sp.has(v.Ref.Name) {
			continue
		}
		if _, err := sp.store.Put(ctx, v.Ref.Name, v.Body); err != nil {
			return nil, 0, fmt.Errorf("kvstore: run %q: %w", runID, err)
		}
		// The value is a slice of the record: keep a copy, not the record.
		sp.keep(v.Ref.Name, append([]byte(nil), v.Body...))
	}
	if len(vals) == 0 {
		return doc, 0, nil
	}
	return doc, time.Since(began), nil
}

// extend returns ctx with its deadline, if any, later by d; cancelling
// ctx still cancels it.
func extend(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok || d <= 0 {
		return ctx, func() {}
	}
	c, cancel := context.WithDeadline(context.WithoutCancel(ctx), dl.Add(d))
	stop := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel()
		}
	})
	return c, func() { stop(); cancel() }
}

// in returns the record data stands for, its references resolved.
func (s *RunStore) in(ctx context.Context, runID string, data []byte) ([]byte, error) {
	if !payload.HasRefs(data) {
		return data, nil
	}
	sp := s.spill.Load()
	if sp == nil {
		return data, nil
	}
	out, err := payload.Join(data, func(r payload.Ref) ([]byte, error) {
		if v, ok := sp.cached(r.Name); ok {
			return v, nil
		}
		v, err := sp.store.ResolveOwn(ctx, r)
		if err != nil {
			return nil, err
		}
		sp.keep(r.Name, v)
		return v, nil
	})
	if err != nil {
		return nil, fmt.Errorf("kvstore: run %q: a value of its record: %w", runID, err)
	}
	return out, nil
}

func (sp *spill) has(name string) bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	_, ok := sp.stored[name]
	return ok
}

func (sp *spill) cached(name string) ([]byte, bool) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	v, ok := sp.values[name]
	return v, ok
}

// keep notes that name is in the bucket and caches its body, evicting
// the oldest bodies beyond valueCacheBytes.
func (sp *spill) keep(name string, body []byte) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.stored[name] = struct{}{}
	if _, ok := sp.values[name]; ok || len(body) > valueCacheBytes {
		return
	}
	sp.values[name], sp.size = body, sp.size+len(body)
	sp.order = append(sp.order, name)
	for sp.size > valueCacheBytes && len(sp.order) > 0 {
		old := sp.order[0]
		sp.order = sp.order[1:]
		sp.size -= len(sp.values[old])
		delete(sp.values, old)
	}
}

// Forget drops what the store remembers of a removed run's values.
func (s *RunStore) Forget(runID string) {
	sp := s.spill.Load()
	if sp == nil {
		return
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	prefix := runID + "/"
	for name := range sp.stored {
		if strings.HasPrefix(name, prefix) {
			delete(sp.stored, name)
		}
	}
	kept := sp.order[:0]
	for _, name := range sp.order {
		if strings.HasPrefix(name, prefix) {
			sp.size -= len(sp.values[name])
			delete(sp.values, name)
			continue
		}
		kept = append(kept, name)
	}
	sp.order = kept
}
