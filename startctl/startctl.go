package startctl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// Window is the idempotency window: how long a start's idempotency key,
// and the decision on a start that did not start its run, are kept (the
// start key bucket's TTL, set when it is created).
const Window = provision.StartKeyWindow

// SingletonGrace is how long a singleton claim whose run has no record
// still holds the key: its start is on its way. Past it, the run is taken
// never to have started (its start failed) and the key is free.
const SingletonGrace = time.Minute

// Digest is the hex SHA-256 of a key: its name in the buckets and the
// timer stream.
func Digest(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// Controlled reports whether a start carries any control.
func Controlled(s *wire.Start) bool {
	return s != nil && (s.IdempotencyKey != "" || s.Singleton != nil || s.Debounce != nil)
}

// Store holds the start key and singleton buckets, bound on first use
// (and created when missing and allowed: Provision creates them).
type Store struct {
	js    jetstream.JetStream
	names subjects.Names

	mu           sync.Mutex
	keys, single jetstream.KeyValue
}

// New returns a Store over js for the deployment names.
func New(js jetstream.JetStream, names subjects.Names) *Store {
	return &Store{js: js, names: names}
}

func (s *Store) bind(ctx context.Context, which *jetstream.KeyValue, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *which != nil {
		return *which, nil
	}
	kv, err := s.js.KeyValue(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = s.js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = s.js.KeyValue(ctx, cfg.Bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w (jetflow dispatcher --provision creates it)", cfg.Bucket, err)
	}
	*which = kv
	return kv, nil
}

func (s *Store) keyBucket(ctx context.Context) (jetstream.KeyValue, error) {
	return s.bind(ctx, &s.keys, provision.StartKeyBucketConfig(s.names, provision.ProvisionOptions{}))
}

func (s *Store) singletonBucket(ctx context.Context) (jetstream.KeyValue, error) {
	return s.bind(ctx, &s.single, provision.SingletonBucketConfig(s.names, provision.ProvisionOptions{}))
}

// ClaimIdempotency records that key starts run id. When the key was
// claimed within the window by another run, it returns that run and true.
// kv.Create is the compare-and-swap: of two starts with one key at once,
// one claims it and the other is answered with its run. A claim by id
// itself (a redelivery) is id's.
func (s *Store) ClaimIdempotency(ctx context.Context, key, id string) (string, bool, error) {
	kv, err := s.keyBucket(ctx)
	if err != nil {
		return "", false, err
	}
	k := Digest(key)
	for {
		_, err = kv.Create(ctx, k, []byte(id))
		if err == nil {
			return id, false, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return "", false, fmt.Errorf("idempotency key %q: %w", key, err)
		}
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // expired or released between the two
		}
		if err != nil {
			return "", false, fmt.Errorf("idempotency key %q: %w", key, err)
		}
		first := string(e.Value())
		return first, first != id, nil
	}
}

// ReleaseIdempotency gives up id's claim of key (a start refused for
// another reason: a retry must be judged again). Another run's claim
// stays.
func (s *Store) ReleaseIdempotency(ctx context.Context, key, id string) error {
	kv, err := s.keyBucket(ctx)
	if err != nil {
		return err
	}
	e, err := kv.Get(ctx, Digest(key))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil || string(e.Value()) != id {
		return err
	}
	err = kv.Delete(ctx, Digest(key), jetstream.LastRevision(e.Revision()))
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		return nil
	}
	return err
}

// MarkDebounced records that the start at input stream sequence seq, of
// run id, is the latest of debounce key's burst, and returns "" — or,
// when a later start (by sequence) was marked already, that start's run:
// this one is replaced. The mark outlives the hold's fire (for the
// window), so a start taken late, after its burst fired, starts nothing.
func (s *Store) MarkDebounced(ctx context.Context, key string, seq uint64, id string) (string, error) {
	kv, err := s.keyBucket(ctx)
	if err != nil {
		return "", err
	}
	k := subjects.DebounceMarkKey(Digest(key))
	val := []byte(strconv.FormatUint(seq, 10) + " " + id)
	for {
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			if _, err := kv.Create(ctx, k, val); errors.Is(err, jetstream.ErrKeyExists) {
				continue
			} else if err != nil {
				return "", fmt.Errorf("debounce key %q: %w", key, err)
			}
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("debounce key %q: %w", key, err)
		}
		var at uint64
		var run string
		if _, err := fmt.Sscanf(string(e.Value()), "%d %s", &at, &run); err != nil {
			return "", fmt.Errorf("debounce key %q: mark %q: %w", key, e.Value(), err)
		}
		switch {
		case at > seq:
			return run, nil
		case at == seq:
			return "", nil
		}
		if _, err := kv.Update(ctx, k, val, e.Revision()); errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
			continue
		} else if err != nil {
			return "", fmt.Errorf("debounce key %q: %w", key, err)
		}
		return "", nil
	}
}

// RunState is what a singleton claim needs to know of its holder.
type RunState int

// Holder states.
const (
	// RunActive: the run has a record and has not settled.
	RunActive RunState = iota
	// RunSettled: the run settled (or was removed).
	RunSettled
	// RunAbsent: the run has no record.
	RunAbsent
)

// StateFunc tells a holder's state.
type StateFunc func(ctx context.Context, runID string) (RunState, error)

// ClaimSingleton makes run id the holder of key and returns "", or
// returns the holder when another run holds it and has not settled. A
// holder with no record is taken to have failed to start once its claim
// is older than SingletonGrace. now is the start's time.
func (s *Store) ClaimSingleton(ctx context.Context, key, id string, now time.Time, state StateFunc) (string, error) {
	kv, err := s.singletonBucket(ctx)
	if err != nil {
		return "", err
	}
	k := Digest(key)
	for {
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			if _, err := kv.Create(ctx, k, []byte(id)); errors.Is(err, jetstream.ErrKeyExists) {
				continue // lost the race: look at the winner
			} else if err != nil {
				return "", fmt.Errorf("singleton key %q: %w", key, err)
			}
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("singleton key %q: %w", key, err)
		}
		holder := string(e.Value())
		if holder == id {
			return "", nil
		}
		st, err := state(ctx, holder)
		switch {
		case err != nil:
			return "", fmt.Errorf("singleton key %q: run %s: %w", key, holder, err)
		case st == RunActive:
			return holder, nil
		case st == RunAbsent && now.Sub(e.Created()) < SingletonGrace:
			return holder, nil
		}
		if _, err := kv.Update(ctx, k, []byte(id), e.Revision()); errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
			continue
		} else if err != nil {
			return "", fmt.Errorf("singleton key %q: %w", key, err)
		}
		return "", nil
	}
}

// Record keeps the decision on run's start for the window.
func (s *Store) Record(ctx context.Context, runID string, d wire.StartDecision) error {
	kv, err := s.keyBucket(ctx)
	if err != nil {
		return err
	}
	data, err := json.Marshal(d)
	if err != nil {
		return err
	}
	_, err = kv.Put(ctx, subjects.StartDecisionKey(runID), data)
	return err
}

// Forget drops the decision on run's start: the run started.
func (s *Store) Forget(ctx context.Context, runID string) error {
	kv, err := s.keyBucket(ctx)
	if err != nil {
		return err
	}
	err = kv.Delete(ctx, subjects.StartDecisionKey(runID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	return err
}

// ErrNoDecision: no decision is kept on the run's start.
var ErrNoDecision = errors.New("no decision on the start")

// Decision reads the decision on run's start. It only reads: a client
// whose bucket does not exist gets ErrNoDecision.
func Decision(ctx context.Context, js jetstream.JetStream, names subjects.Names, runID string) (wire.StartDecision, uint64, error) {
	kv, err := js.KeyValue(ctx, names.StartKeyBucket())
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return wire.StartDecision{}, 0, ErrNoDecision
	}
	if err != nil {
		return wire.StartDecision{}, 0, err
	}
	e, err := kv.Get(ctx, subjects.StartDecisionKey(runID))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return wire.StartDecision{}, 0, ErrNoDecision
	}
	if err != nil {
		return wire.StartDecision{}, 0, err
	}
	var d wire.StartDecision
	if err := json.Unmarshal(e.Value(), &d); err != nil {
		return wire.StartDecision{}, 0, fmt.Errorf("decision on run %s: %w", runID, err)
	}
	return d, e.Revision(), nil
}

// Hold is the schedule message that holds run's start (its body and
// payload reference as they came) until due, on subject (DebounceHold or
// SingletonHold): the server fires it on the run's timer subject marked HeaderHeld=why, and
// the dispatchers take it for the start again.
func Hold(names subjects.Names, subject, runID, why string, start jetstream.Msg, due time.Time) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = start.Data()
	// A body by reference stays one (docs/PROTOCOL.md 2.4).
	for _, h := range []string{wire.HeaderPayload, wire.HeaderPayloadSize, wire.HeaderPayloadDigest} {
		if v := start.Headers().Get(h); v != "" {
			m.Header.Set(h, v)
		}
	}
	m.Header.Set(wire.HeaderSchedule, "@at "+due.UTC().Format(time.RFC3339Nano))
	m.Header.Set(wire.HeaderScheduleTarget, names.Fired(runID))
	m.Header.Set(wire.HeaderScheduleTTL, wire.FiredTimerTTLValue)
	m.Header.Set(wire.HeaderRunID, runID)
	m.Header.Set(wire.HeaderHeld, why)
	m.Header.Set(wire.HeaderDeadline, strconv.FormatInt(due.UnixMilli(), 10))
	return m
}

// QueueDelay is how long a start queued behind a singleton waits before
// it looks again, after round looks (0 the first): 1 s doubling to 15 s.
func QueueDelay(round int) time.Duration {
	d := time.Second
	for i := 0; i < round && d < 15*time.Second; i++ {
		d *= 2
	}
	return min(d, 15*time.Second)
}
