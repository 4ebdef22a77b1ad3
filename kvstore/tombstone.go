package kvstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// ErrNoKeyTTL is wrapped by Tombstone's error when the run bucket does not
// take per-key TTLs: it was provisioned before retention existed.
var ErrNoKeyTTL = errors.New("the run bucket takes no per-key TTLs (provision it again: jetflow dispatcher --provision)")

// errCodeMessageTTLDisabled is the server's "per-message TTL is disabled"
// (10166), which nats.go names no constant for.
const errCodeMessageTTLDisabled jetstream.ErrorCode = 10166

// TakesKeyTTLs reports whether the run bucket takes per-key TTLs, which
// Tombstone needs.
func (s *RunStore) TakesKeyTTLs(ctx context.Context) (bool, error) {
	st, err := s.b.js.Stream(ctx, s.b.stream)
	if err != nil {
		return false, fmt.Errorf("kvstore: inspect bucket %q: %w", s.b.name, err)
	}
	cfg := st.CachedInfo().Config
	s.oneRevision.Store(cfg.MaxMsgsPerSubject == 1)
	return cfg.AllowMsgTTL, nil
}

// Tombstone replaces a run's state, and every older revision the bucket
// keeps, by data, if its revision is still lastRevision, with a life of
// ttl (at least a second): the server then deletes it and the key is free
// again. The nats.go KV API sets a TTL only
// on Create; this is the same compare-and-swap write with a TTL, which
// the server accepts on any write to a bucket with per-key TTLs. A lost
// compare-and-swap wraps ErrStale.
func (s *RunStore) Tombstone(ctx context.Context, runID string, data []byte, lastRevision uint64, ttl time.Duration) (uint64, error) {
	if err := subjects.CheckRunID(runID); err != nil {
		return 0, fmt.Errorf("kvstore: remove run: %w", err)
	}
	m := nats.NewMsg(s.b.prefix + runID)
	m.Data = data
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(lastRevision, 10))
	// The only message left on the key: with a bucket history above one,
	// an older revision would otherwise be the key's value again once the
	// tombstone expired. (nats-server 2.15.2 was measured not to expire a
	// message by its TTL in such a bucket at all: there tombstones stay.)
	// With one revision the bucket's limit drops the record anyway, and a
	// roll-up (a purge of the key) was a third of a removal's server CPU.
	if !s.oneRevision.Load() {
		m.Header.Set(wire.HeaderRollup, "sub")
	}
	m.Header.Set(wire.HeaderTTL, strconv.FormatInt(int64(max(ttl, time.Second).Round(time.Second)/time.Second), 10))
	ack, err := s.b.js.PublishMsg(ctx, m)
	var ae *jetstream.APIError
	switch {
	case err == nil:
		return ack.Sequence, nil
	case errors.As(err, &ae) && ae.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence, unchecked(err):
		return 0, fmt.Errorf("kvstore: remove run %q in bucket %q from revision %d: %w (%w)", runID, s.b.name, lastRevision, ErrStale, err)
	case errors.As(err, &ae) && ae.ErrorCode == errCodeMessageTTLDisabled:
		return 0, fmt.Errorf("kvstore: remove run %q: %w", runID, ErrNoKeyTTL)
	}
	return 0, fmt.Errorf("kvstore: remove run %q in bucket %q: %w", runID, s.b.name, err)
}
