package kvstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/jetflow/jetflow/payload"
)

// A run record larger than the payload threshold is kept in the payload
// bucket, and the run bucket holds a stub naming it:
//
//	{"$ref":{"name":"<run>/record/<sha256 hex>","size":N,"digest":"SHA-256=…"}}
//
// The key's revision still orders every write, so compare-and-swap is
// unchanged; Get, GetEntry and List return the record itself. A record is
// never written with "$ref" as its first member (it begins with "state"),
// so the stub cannot be mistaken for one.
var stubPrefix = []byte(`{"$ref":`)

type stub struct {
	Ref stubRef `json:"$ref"`
}

type stubRef struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	Digest string `json:"digest"`
}

// spill is the state of a RunStore that keeps large records by reference.
type spill struct {
	store *payload.Store
	// last maps a run to the object its last record written or read by
	// this store is in, so that the next write deletes it. Objects a
	// write of another process left behind go with the run (retention).
	last sync.Map
}

// WithPayloads makes the store keep records larger than store's threshold
// in the payload bucket (see above), and read such records back. Without
// it a stub is an error naming the bucket. The first call wins: a later
// one (a dispatcher given a store its fleet set up) changes nothing.
func (s *RunStore) WithPayloads(store *payload.Store) *RunStore {
	s.spill.CompareAndSwap(nil, &spill{store: store})
	return s
}

// IsStub reports whether data is the stub of a record kept in the
// payload bucket.
func IsStub(data []byte) bool { return bytes.HasPrefix(data, stubPrefix) }

// out returns what the run bucket stores for data, and the object name
// the record went to ("" when it stays inline).
func (s *RunStore) out(ctx context.Context, runID string, data []byte) ([]byte, string, error) {
	sp := s.spill.Load()
	if sp == nil || len(data) <= sp.store.Threshold() {
		return data, "", nil
	}
	sum := sha256.Sum256(data)
	name := payload.Name(runID, payload.KindRecord, hex.EncodeToString(sum[:]))
	ref, err := sp.store.Put(ctx, name, data)
	if err != nil {
		return nil, "", fmt.Errorf("kvstore: run %q: record of %d bytes: %w", runID, len(data), err)
	}
	b, err := json.Marshal(stub{Ref: stubRef(ref)})
	if err != nil {
		return nil, "", err
	}
	return b, name, nil
}

// written records that runID's record now is in object name ("" for
// inline) and deletes the object of the record it replaced.
func (s *RunStore) written(ctx context.Context, runID, name string) {
	sp := s.spill.Load()
	if sp == nil {
		return
	}
	prev, _ := sp.last.Load(runID)
	if name == "" {
		sp.last.Delete(runID)
	} else {
		sp.last.Store(runID, name)
	}
	if p, _ := prev.(string); p != "" && p != name {
		// Housekeeping: a leftover goes with the run.
		_ = sp.store.Delete(ctx, p)
	}
}

// in returns the record data stands for.
func (s *RunStore) in(ctx context.Context, runID string, data []byte) ([]byte, error) {
	if !IsStub(data) {
		return data, nil
	}
	var st stub
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("kvstore: run %q: unreadable record stub: %w", runID, err)
	}
	sp := s.spill.Load()
	if sp == nil {
		return nil, fmt.Errorf("kvstore: run %q: its record is object %q of the payload bucket, and this store does not read it (RunStore.WithPayloads)", runID, st.Ref.Name)
	}
	body, err := sp.store.ResolveOwn(ctx, payload.Ref(st.Ref))
	if err != nil {
		return nil, fmt.Errorf("kvstore: run %q: %w", runID, err)
	}
	sp.last.Store(runID, st.Ref.Name)
	return body, nil
}

// Forget drops what the store remembers of a removed run.
func (s *RunStore) Forget(runID string) {
	if sp := s.spill.Load(); sp != nil {
		sp.last.Delete(runID)
	}
}

// ReadStub returns the record a stub stands for, read from ps: for
// readers of the run bucket's stream that do not go through a RunStore
// (the run index).
func ReadStub(ctx context.Context, ps *payload.Store, runID string, data []byte) ([]byte, error) {
	s := &RunStore{}
	s.WithPayloads(ps)
	return s.in(ctx, runID, data)
}
