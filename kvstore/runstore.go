package kvstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
)

// RunStore keeps each run's state in the run bucket, one key per run id,
// written only by compare-and-swap on the key's revision. Values are
// opaque bytes: the dispatcher owns their encoding.
type RunStore struct {
	b *Bucket
	// oneRevision: the bucket keeps one revision per key (TakesKeyTTLs
	// found out), so a tombstone needs no roll-up to replace the record.
	oneRevision atomic.Bool
	// spill, when set, keeps large record values in the payload bucket
	// (spill.go).
	spill atomic.Pointer[spill]
}

// OpenRunStore binds the run bucket of names (it must be provisioned).
func OpenRunStore(ctx context.Context, js jetstream.JetStream, names subjects.Names) (*RunStore, error) {
	b, err := BindBucket(ctx, js, names, names.RunBucket())
	if err != nil {
		return nil, err
	}
	return &RunStore{b: b}, nil
}

// Bucket is the run bucket's name.
func (s *RunStore) Bucket() string { return s.b.name }

// ReadOption adjusts a read.
type ReadOption func(*readOptions)

type readOptions struct{ leader bool }

// FromLeader reads through the bucket's stream leader. A plain read is a
// direct get that any replica may answer, and on a replicated bucket a
// replica can lag behind a write just acknowledged. Read from the leader
// after ErrStale, so that the retry starts from the winner's revision
// instead of conflicting again. It costs a little more than a direct get.
func FromLeader() ReadOption { return func(o *readOptions) { o.leader = true } }

func collectRead(opts []ReadOption) readOptions {
	var o readOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Get returns a run's state and its revision, or an error wrapping
// ErrRunNotFound.
func (s *RunStore) Get(ctx context.Context, runID string, opts ...ReadOption) ([]byte, uint64, error) {
	if err := subjects.CheckRunID(runID); err != nil {
		return nil, 0, fmt.Errorf("kvstore: get run: %w", err)
	}
	e, err := s.b.Get(ctx, runID, collectRead(opts).leader)
	if errors.Is(err, ErrNoKey) {
		return nil, 0, fmt.Errorf("kvstore: run %q in bucket %q: %w", runID, s.b.name, ErrRunNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("kvstore: get run %q from bucket %q: %w", runID, s.b.name, err)
	}
	data, err := s.in(ctx, runID, e.Data)
	if err != nil {
		return nil, 0, err
	}
	return data, e.Revision, nil
}

// GetEntry is Get with the time the revision was stored, the time a
// listing shows as the run's last change.
func (s *RunStore) GetEntry(ctx context.Context, runID string) (Entry, error) {
	if err := subjects.CheckRunID(runID); err != nil {
		return Entry{}, fmt.Errorf("kvstore: get run: %w", err)
	}
	e, err := s.b.Get(ctx, runID, false)
	if errors.Is(err, ErrNoKey) {
		return Entry{}, fmt.Errorf("kvstore: run %q in bucket %q: %w", runID, s.b.name, ErrRunNotFound)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("kvstore: get run %q from bucket %q: %w", runID, s.b.name, err)
	}
	data, err := s.in(ctx, runID, e.Data)
	if err != nil {
		return Entry{}, err
	}
	return Entry{RunID: runID, Data: data, Revision: e.Revision, Updated: e.Created}, nil
}

// Create stores a new run's state and returns its revision. A run already
// stored under runID gives an error wrapping ErrRunExists.
func (s *RunStore) Create(ctx context.Context, runID string, data []byte) (uint64, error) {
	if err := subjects.CheckRunID(runID); err != nil {
		return 0, fmt.Errorf("kvstore: create run: %w", err)
	}
	data, took, err := s.out(ctx, runID, data)
	if err != nil {
		return 0, err
	}
	ctx, cancel := extend(ctx, took)
	defer cancel()
	rev, err := s.b.kv.Create(ctx, runID, data)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return 0, fmt.Errorf("kvstore: create run %q in bucket %q: %w", runID, s.b.name, ErrRunExists)
	}
	if err != nil {
		return 0, fmt.Errorf("kvstore: create run %q in bucket %q: %w", runID, s.b.name, err)
	}
	return rev, nil
}

// Update replaces a run's state if its revision is still lastRevision and
// returns the new revision. Otherwise the error wraps ErrStale: another
// writer got there first; reload (FromLeader) and decide again.
//
// On a replicated bucket the server also refuses a write it cannot check
// (code 10164): while another write to the key is in flight, and, in
// nats-server 2.15.2, for a moment after it acknowledged the previous
// write to the key. Update then re-reads the key from the leader and
// retries with backoff while the key is still at lastRevision, so ErrStale
// always means the key moved on.
func (s *RunStore) Update(ctx context.Context, runID string, data []byte, lastRevision uint64) (uint64, error) {
	if err := subjects.CheckRunID(runID); err != nil {
		return 0, fmt.Errorf("kvstore: update run: %w", err)
	}
	data, took, err := s.out(ctx, runID, data)
	if err != nil {
		return 0, err
	}
	ctx, cancel := extend(ctx, took)
	defer cancel()
	rev, err := s.b.kv.Update(ctx, runID, data, lastRevision)
	if err == nil {
		return rev, nil
	}
	if unchecked(err) {
		rev, err = Retry(ctx, staleRecheckFor, func() (uint64, error) {
			cur, gerr := s.b.Get(ctx, runID, true)
			switch {
			case errors.Is(gerr, ErrNoKey) && lastRevision != 0, gerr == nil && cur.Revision != lastRevision:
				return 0, Permanent(err) // the key really moved on
			case gerr != nil && !errors.Is(gerr, ErrNoKey):
				return 0, Classify(gerr)
			}
			rev, uerr := s.b.kv.Update(ctx, runID, data, lastRevision)
			if uerr == nil || unchecked(uerr) {
				return rev, uerr
			}
			return 0, Permanent(uerr)
		})
		if err == nil {
			return rev, nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return 0, fmt.Errorf("kvstore: update run %q in bucket %q: %w", runID, s.b.name, err)
		}
	}
	// A lost compare-and-swap is ErrKeyRevisionMismatch (server codes
	// 10071 and 10164); ErrKeyExists would miss 10164 on replicated buckets.
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return 0, fmt.Errorf("kvstore: update run %q in bucket %q from revision %d: %w (%w)", runID, s.b.name, lastRevision, ErrStale, err)
	}
	return 0, fmt.Errorf("kvstore: update run %q in bucket %q: %w", runID, s.b.name, err)
}

// staleRecheckFor bounds Update's retries of writes the server could not
// check.
const staleRecheckFor = 5 * time.Second

// unchecked reports the server's "wrong last sequence" without a sequence
// (10164): it did not compare revisions, it refused because another write
// to the subject was in flight.
func unchecked(err error) bool {
	var ae *jetstream.APIError
	return errors.As(err, &ae) && ae.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// Entry is one run's stored state.
type Entry struct {
	RunID    string
	Data     []byte
	Revision uint64
	// Updated is when this revision was stored (server time).
	Updated time.Time
}

// List returns the current state of every run that keep accepts (nil keeps
// all), ordered by run id. It reads the whole bucket in one pass (about
// 4-8 s per million runs on one node), so keep it off hot paths.
func (s *RunStore) List(ctx context.Context, keep func(Entry) bool) ([]Entry, error) {
	var out []Entry
	err := s.b.Scan(ctx, jetstream.AllKeys, func(e jetstream.KeyValueEntry) {
		en := Entry{RunID: e.Key(), Data: e.Value(), Revision: e.Revision(), Updated: e.Created()}
		if keep == nil || keep(en) {
			out = append(out, en)
		}
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RunID < out[j].RunID })
	return out, nil
}

// Watch follows changes to every run. The watcher's Updates channel first
// carries current values and then a nil entry, unless opts include
// jetstream.UpdatesOnly(); entry keys are run ids. Stop the watcher when
// done.
func (s *RunStore) Watch(ctx context.Context, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	w, err := s.b.kv.WatchAll(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("kvstore: watch bucket %q: %w", s.b.name, err)
	}
	return w, nil
}

// WatchRun follows changes to one run, as Watch does.
func (s *RunStore) WatchRun(ctx context.Context, runID string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	if err := subjects.CheckRunID(runID); err != nil {
		return nil, fmt.Errorf("kvstore: watch run: %w", err)
	}
	w, err := s.b.kv.Watch(ctx, runID, opts...)
	if err != nil {
		return nil, fmt.Errorf("kvstore: watch run %q in bucket %q: %w", runID, s.b.name, err)
	}
	return w, nil
}
