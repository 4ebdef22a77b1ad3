package runindex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// deletedHeadTTL is how long the head of a deleted run stays: long enough
// that a redelivered older change of the run (an AckWait or two) finds it
// and is skipped, instead of indexing the run again.
const deletedHeadTTL = time.Hour

// maxRaces bounds the retries of one change against other indexers
// writing the same run; past it the change is delivered again.
const maxRaces = 8

// change is one state of a run in the run bucket: its record (nil when
// deleted), the bucket revision and when it was written.
type change struct {
	run     string
	data    []byte
	deleted bool
	rev     uint64
	at      time.Time
}

type writer struct {
	js     jetstream.JetStream
	cfg    Config
	names  subjects.Names
	index  jetstream.Stream
	search SearchFunc
	log    *slog.Logger
}

func newWriter(ctx context.Context, js jetstream.JetStream, cfg Config) (*writer, error) {
	n := cfg.Names
	s, err := js.Stream(ctx, n.IndexStream())
	if err != nil {
		return nil, fmt.Errorf("runindex: bind index stream %q (run Provision): %w", n.IndexStream(), err)
	}
	w := &writer{js: js, cfg: cfg, names: n, index: s, search: cfg.Search, log: cfg.Logger}
	if w.search == nil {
		reg, err := registry.OpenRegistry(ctx, js, n, registry.RegistryConfig{})
		if err != nil {
			return nil, fmt.Errorf("runindex: %w", err)
		}
		w.search = registrySearch(reg, cfg.OpTimeout)
	}
	return w, nil
}

// registrySearch reads each revision's policy once: deployments are
// immutable.
func registrySearch(reg *registry.Registry, timeout time.Duration) SearchFunc {
	var mu sync.Mutex
	cache := map[string]map[string]string{}
	return func(workflow, revision string) (map[string]string, error) {
		key := workflow + "@" + revision
		mu.Lock()
		s, ok := cache[key]
		mu.Unlock()
		if ok {
			return s, nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		d, err := reg.GetRevision(ctx, workflow, revision)
		if errors.Is(err, registry.ErrWorkflowNotFound) {
			return nil, nil // a run of an undeployed revision: no attributes
		}
		if err != nil {
			return nil, err
		}
		s = d.Policy.Search()
		mu.Lock()
		cache[key] = s
		mu.Unlock()
		return s, nil
	}
}

// handle indexes one change of the run bucket and acknowledges it, or
// hands it back for a later delivery.
func (w *writer) handle(ctx context.Context, m jetstream.Msg) {
	meta, err := m.Metadata()
	if err != nil {
		_ = m.Term()
		return
	}
	run := strings.TrimPrefix(m.Subject(), w.names.KVKeyPrefix(w.names.RunBucket()))
	c := change{run: run, data: m.Data(), rev: meta.Sequence.Stream, at: meta.Timestamp, deleted: isDeletion(m.Headers())}
	log := w.log.With(slog.String("run_id", run))
	if err := subjects.CheckRunID(run); err != nil {
		log.Warn("runindex: a run bucket key that is no run id; not indexed", slog.Any("error", err))
		_ = m.Ack()
		return
	}
	err = w.index1(ctx, c)
	var bad *unindexable
	switch {
	case errors.As(err, &bad):
		log.Warn("runindex: record not indexed", slog.Any("error", err))
		_ = m.Ack()
	case err != nil:
		if ctx.Err() == nil {
			log.Warn("runindex: index write failed; will retry", slog.Any("error", err))
		}
		_ = m.NakWithDelay(time.Second)
	default:
		_ = m.Ack()
	}
}

func isDeletion(h map[string][]string) bool {
	get := func(k string) string {
		if v := h[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	return get("KV-Operation") != "" || get(jetstream.MarkerReasonHeader) != ""
}

// unindexable is a record the index cannot hold (it cannot be decoded):
// logged and skipped, not retried.
type unindexable struct{ err error }

func (u *unindexable) Error() string { return u.err.Error() }
func (u *unindexable) Unwrap() error { return u.err }

// index1 makes the run's entries those of change c, unless the index
// already holds a later revision of the run. It publishes the entries,
// then the head by compare-and-swap on the head's own sequence, then
// purges the subjects the run no longer has. A reader lists an entry only
// if the run's head names a revision no later than the entry's
// (client.ListRuns), so entries left by a crash or by a writer that lost
// a race are never listed. A writer that lost (another dispatcher indexed
// the run meanwhile) may have overwritten the winner's entries with
// older ones, so it reads the run's current record and writes again.
func (w *writer) index1(ctx context.Context, c change) error {
	forced := false
	mine := map[string]bool{} // subjects written by attempts that lost
	for range maxRaces {
		head, headSeq, err := w.head(ctx, c.run)
		if err != nil {
			return err
		}
		if c.deleted && c.rev == 0 && head != nil {
			c.rev = head.RecordRev // gone without a trace: drop what the head lists
		}
		if head != nil && (head.RecordRev > c.rev || head.RecordRev == c.rev && !forced) {
			return nil // indexed already
		}
		var subs []string
		if !c.deleted {
			e, err := Build(c.run, c.data, c.rev, c.at, w.search)
			if err != nil {
				return &unindexable{err}
			}
			subs = Subjects(w.names, e)
			if err := w.publish(ctx, e, subs); err != nil {
				return err
			}
		}
		seq, err := w.writeHead(ctx, c, subs, headSeq)
		if lostRace(err) {
			for _, s := range subs {
				mine[s] = true
			}
			if c, err = w.current(ctx, c.run); err != nil {
				return err
			}
			forced = true
			continue
		}
		if err != nil {
			return err
		}
		if head != nil {
			for _, s := range head.Subjects {
				mine[s] = true
			}
		}
		return w.clean(ctx, mine, subs, seq)
	}
	return fmt.Errorf("runindex: run %s: lost %d races to index it in a row", c.run, maxRaces)
}

// head is the run's head and its sequence (0 and nil when none).
func (w *writer) head(ctx context.Context, run string) (*wire.IndexHead, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	m, err := kvstore.LastOnSubject(ctx, w.js, w.names.IndexStream(), w.names.IndexHead(run))
	if errors.Is(err, kvstore.ErrNoKey) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("runindex: read the head of run %s: %w", run, err)
	}
	var h wire.IndexHead
	if err := json.Unmarshal(m.Data, &h); err != nil {
		return nil, m.Sequence, nil // unreadable: rewrite it
	}
	return &h, m.Sequence, nil
}

// publish writes e under each of subs, replacing what they held.
func (w *writer) publish(ctx context.Context, e *wire.IndexEntry, subs []string) error {
	body, err := json.Marshal(e)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	acks := make([]jetstream.PubAckFuture, 0, len(subs))
	for _, s := range subs {
		f, err := w.js.PublishAsync(s, body)
		if err != nil {
			return fmt.Errorf("runindex: index run %s on %q: %w", e.Run, s, err)
		}
		acks = append(acks, f)
	}
	for i, f := range acks {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("runindex: index run %s on %q: %w", e.Run, subs[i], err)
		case <-ctx.Done():
			return fmt.Errorf("runindex: index run %s on %q: %w", e.Run, subs[i], ctx.Err())
		}
	}
	return nil
}

// clean purges the subjects of stale that keep is without, up to
// sequence before: what a writer publishes on them after this run's head
// was written is newer and stays.
func (w *writer) clean(ctx context.Context, stale map[string]bool, keep []string, before uint64) error {
	for s := range stale {
		if slices.Contains(keep, s) {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
		err := w.index.Purge(pctx, jetstream.WithPurgeSubject(s), jetstream.WithPurgeSequence(before))
		cancel()
		if err != nil {
			return fmt.Errorf("runindex: purge %q: %w", s, err)
		}
	}
	return nil
}

// writeHead records that the run's entries are subs, made from revision
// c.rev, if the head is still at sequence prev; it returns the head's
// new sequence.
func (w *writer) writeHead(ctx context.Context, c change, subs []string, prev uint64) (uint64, error) {
	body, err := json.Marshal(wire.IndexHead{RecordRev: c.rev, Subjects: subs})
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	opts := []jetstream.PublishOpt{jetstream.WithExpectLastSequencePerSubject(prev)}
	if c.deleted {
		opts = append(opts, jetstream.WithMsgTTL(deletedHeadTTL))
	}
	ack, err := w.js.Publish(ctx, w.names.IndexHead(c.run), body, opts...)
	if err != nil {
		return 0, fmt.Errorf("runindex: write the head of run %s: %w", c.run, err)
	}
	return ack.Sequence, nil
}

func lostRace(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// current is the run's latest state in the run bucket, read through the
// leader: its record, or its deletion.
func (w *writer) current(ctx context.Context, run string) (change, error) {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	n := w.names
	m, err := kvstore.LastOnSubject(ctx, w.js, n.KVStream(n.RunBucket()), n.KVKey(n.RunBucket(), run))
	if errors.Is(err, kvstore.ErrNoKey) {
		return change{run: run, deleted: true}, nil
	}
	if err != nil {
		return change{}, fmt.Errorf("runindex: read run %s: %w", run, err)
	}
	return change{run: run, data: m.Data, rev: m.Sequence, at: m.Time, deleted: isDeletion(m.Header)}, nil
}
