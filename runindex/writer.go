package runindex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
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

// minEntryTTL is the shortest TTL a removed run's entries are given; a
// tombstone closer than that to its expiry has its entries purged by the
// deletion that follows, as every other run's are.
const minEntryTTL = 5 * time.Second

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
	heads  *headCache
	// purgeAPI is the index stream's purge request subject; discard the
	// inbox its replies go to, unread.
	purgeAPI, discard string
	sub               *nats.Subscription
	// serial has a change's messages written one after the other: a
	// replicated stream refuses a message that checks a subject's last
	// sequence while another such check of it is in flight (10164,
	// "wrong last sequence"), and every message of a change checks the
	// head's, so sent at once all but the first were refused, every time.
	serial bool
}

// close ends what newWriter began.
func (w *writer) close() { _ = w.sub.Unsubscribe() }

// headCacheSize bounds the heads a writer remembers.
const headCacheSize = 100_000

// headState is a run's head as last written or read, and its sequence.
type headState struct {
	seq  uint64
	head *wire.IndexHead
}

// headCache remembers the heads this process wrote, so that the next
// change of a run needs no read; it forgets all at once when full.
type headCache struct {
	mu  sync.Mutex
	max int
	m   map[string]headState
}

func newHeadCache(size int) *headCache { return &headCache{max: size, m: map[string]headState{}} }

func (h *headCache) get(run string) (headState, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.m[run]
	return s, ok
}

func (h *headCache) put(run string, s headState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.m) >= h.max {
		clear(h.m)
	}
	h.m[run] = s
}

func newWriter(ctx context.Context, js jetstream.JetStream, cfg Config) (*writer, error) {
	n := cfg.Names
	s, err := js.Stream(ctx, n.IndexStream())
	if err != nil {
		return nil, fmt.Errorf("runindex: bind index stream %q (run Provision): %w", n.IndexStream(), err)
	}
	w := &writer{
		js: js, cfg: cfg, names: n, index: s, search: cfg.Search, log: cfg.Logger, heads: newHeadCache(headCacheSize),
		serial: s.CachedInfo().Config.Replicas > 1,
	}
	w.purgeAPI = n.API("STREAM.PURGE", n.IndexStream())
	nc := js.Conn()
	w.discard = nc.NewRespInbox()
	if w.sub, err = nc.Subscribe(w.discard, func(*nats.Msg) {}); err != nil {
		return nil, fmt.Errorf("runindex: subscribe %q: %w", w.discard, err)
	}
	if w.search == nil {
		reg, err := registry.OpenRegistry(ctx, js, n, registry.RegistryConfig{})
		if err != nil {
			return nil, fmt.Errorf("runindex: %w", err)
		}
		w.search = RegistrySearch(reg, cfg.OpTimeout)
	}
	return w, nil
}

// RegistrySearch is the search attributes of the runs of a workflow
// revision, read from the deployments in reg: those its revision's policy
// declares, and those the workflow's latest revision declares besides (a
// name both declare keeps its own revision's pointer), so that the runs
// of older revisions become findable by an attribute a later revision
// added, once they are indexed again (jetflow index rebuild). Each
// revision's policy is read once (deployments are immutable); a
// workflow's latest revision once per SearchFunc, so a later deployment
// applies from the next indexing session (a rebuild, a restart) or CLI
// call on.
func RegistrySearch(reg registry.Reader, timeout time.Duration) SearchFunc {
	var mu sync.Mutex
	own, latest := map[string]map[string]string{}, map[string]map[string]string{}
	read := func(cache map[string]map[string]string, key string, get func(context.Context) (registry.Deployment, error)) (map[string]string, error) {
		mu.Lock()
		s, ok := cache[key]
		mu.Unlock()
		if ok {
			return s, nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		d, err := get(ctx)
		if errors.Is(err, registry.ErrWorkflowNotFound) {
			err = nil // a run of an undeployed revision: no attributes
		} else if err == nil {
			s = d.Policy.Search()
		}
		if err != nil {
			return nil, err
		}
		mu.Lock()
		cache[key] = s
		mu.Unlock()
		return s, nil
	}
	return func(workflow, revision string) (map[string]string, error) {
		mine, err := read(own, workflow+"@"+revision, func(ctx context.Context) (registry.Deployment, error) {
			return reg.GetRevision(ctx, workflow, revision)
		})
		if err != nil {
			return nil, err
		}
		last, err := read(latest, workflow, func(ctx context.Context) (registry.Deployment, error) { return reg.Get(ctx, workflow) })
		if err != nil {
			return nil, err
		}
		if len(last) == 0 {
			return mine, nil
		}
		out := maps.Clone(last)
		maps.Copy(out, mine)
		return out, nil
	}
}

// handle indexes one change of the run bucket and acknowledges it, or
// hands it back for a later delivery.
// parse reads the change m carries; a message without JetStream
// metadata is no change (nil).
func (w *writer) parse(m jetstream.Msg) *change {
	meta, err := m.Metadata()
	if err != nil {
		return nil
	}
	run := strings.TrimPrefix(m.Subject(), w.names.KVKeyPrefix(w.names.RunBucket()))
	return &change{run: run, data: m.Data(), rev: meta.Sequence.Stream, at: meta.Timestamp, deleted: isDeletion(m.Headers())}
}

// handle indexes c, the change m carries (nil: none), and acknowledges m,
// or has it delivered again when the index could not be written.
func (w *writer) handle(ctx context.Context, m jetstream.Msg, c *change) {
	if c == nil {
		_ = m.Term()
		return
	}
	log := w.log.With(slog.String("run_id", c.run))
	if err := subjects.CheckRunID(c.run); err != nil {
		log.Warn("runindex: a run bucket key that is no run id; not indexed", slog.Any("error", err))
		_ = m.Ack()
		return
	}
	err := w.index1(ctx, *c)
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
// then the head by compare-and-swap on the head's own sequence (one round
// trip for all of them), then has the subjects the run no longer has
// purged. A reader lists an entry only if the run's head names a
// revision no later than the entry's (client.ListRuns), so entries left
// by a crash, a lost race or a purge not yet done are never listed.
//
// The head's sequence is taken from what this process last wrote, or
// guessed absent for a run it has not seen (a new run has none). Every
// message is published on the condition that the head is still at that
// sequence, so a wrong guess (another dispatcher indexed the run) stores
// nothing: it is refused, reads the head and writes again. Reading the
// head first instead costs a read wherever the guess is right, which at
// one dispatcher is always. A writer that
// lost to another dispatcher's later revision may have overwritten its
// entries with older ones, so it reads the run's current record and
// writes again.
func (w *writer) index1(ctx context.Context, c change) error {
	known, ok := w.heads.get(c.run)
	fresh := false // known was read from the stream just now
	forced := false
	mine := map[string]bool{} // subjects written by attempts that lost
	for range maxRaces {
		head, headSeq := known.head, known.seq
		if !ok {
			head, headSeq = nil, 0
		}
		if c.deleted && c.rev == 0 && head != nil {
			c.rev = head.RecordRev // gone without a trace: drop what the head lists
		}
		if head != nil && (head.RecordRev > c.rev || head.RecordRev == c.rev && fresh && !forced) {
			return nil // indexed already (a head only grows: a remembered one too)
		}
		var e *wire.IndexEntry
		if !c.deleted {
			var err error
			if e, err = Build(c.run, c.data, c.rev, c.at, w.search); err != nil {
				if _, ok := errors.AsType[*searchError](err); ok {
					return err // the registry did not answer: the change comes again
				}
				return &unindexable{err}
			}
			if e.Expires != 0 && time.UnixMilli(e.Expires).Before(w.cfg.Clock.Now().Add(minEntryTTL)) {
				e.Expires = 0 // about to expire: purged as any other
			}
		}
		hd := Head(e, c.rev)
		seq, err := w.write(ctx, c, e, hd, headSeq)
		if err == nil {
			if head != nil && !w.expireOnTheirOwn(head) {
				for _, s := range Subjects(w.names, c.run, head) {
					mine[s] = true
				}
			}
			w.heads.put(c.run, headState{seq: seq, head: hd})
			w.clean(mine, Subjects(w.names, c.run, hd), seq)
			return nil
		}
		if !lostRace(err) {
			return err
		}
		for _, s := range Subjects(w.names, c.run, hd) {
			mine[s] = true
		}
		cur, curSeq, err := w.head(ctx, c.run)
		if err != nil {
			return err
		}
		known, ok, fresh = headState{seq: curSeq, head: cur}, true, true
		if cur != nil && cur.RecordRev >= c.rev {
			// Another writer got there first: what this one wrote may
			// have replaced its entries.
			if c, err = w.current(ctx, c.run); err != nil {
				return err
			}
			forced = true
		}
	}
	return fmt.Errorf("runindex: run %s: lost %d races to index it in a row", c.run, maxRaces)
}

// entryTTL is the TTL of e's messages: a removed run's entries expire
// with its tombstone (their Expires, unless index1 found the tombstone
// about to expire), which saves the purges of the deletion that follows;
// 0 (no TTL) for every other entry.
func (w *writer) entryTTL(e *wire.IndexEntry) time.Duration {
	if e == nil || e.Status != wire.StatusRemoved || e.Expires == 0 {
		return 0
	}
	ttl := time.UnixMilli(e.Expires).Sub(w.cfg.Clock.Now()).Round(time.Second) + time.Second
	return max(ttl, time.Second)
}

// expireOnTheirOwn says whether the entries head names expire by their
// TTL soon enough not to be purged: a removed run's, due to expire before
// a deleted head written now would (a reader ignores them meanwhile: the
// head names a later revision).
func (w *writer) expireOnTheirOwn(head *wire.IndexHead) bool {
	if head.Status != wire.StatusRemoved || head.Expires == 0 {
		return false
	}
	return time.UnixMilli(head.Expires).Before(w.cfg.Clock.Now().Add(deletedHeadTTL / 2))
}

// head is the run's head and its sequence (0 and nil when none), read
// with a direct get.
func (w *writer) head(ctx context.Context, run string) (*wire.IndexHead, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	m, err := kvstore.DirectLast(ctx, w.js, w.names.IndexStream(), w.names.IndexHead(run))
	if errors.Is(err, kvstore.ErrNoKey) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("runindex: read the head of run %s: %w", run, err)
	}
	var h wire.IndexHead
	if err := json.Unmarshal(m.Data, &h); err != nil {
		return &wire.IndexHead{}, m.Sequence, nil // unreadable: rewrite it
	}
	return &h, m.Sequence, nil
}

// write publishes e under each of the subjects hd names (replacing what
// they held), then hd, each only if the head is still at sequence prev,
// and waits for all of them; it returns the head's new sequence. One
// connection keeps their order in the stream.
func (w *writer) write(ctx context.Context, c change, e *wire.IndexEntry, hd *wire.IndexHead, prev uint64) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	var acks []jetstream.PubAckFuture
	var seq uint64
	// send publishes one message; a serial writer waits for its ack.
	send := func(subj string, body []byte, opts []jetstream.PublishOpt) error {
		f, err := w.js.PublishAsync(subj, body, opts...)
		if err != nil {
			return w.writeErr(c.run, subj, err)
		}
		if !w.serial {
			acks = append(acks, f)
			return nil
		}
		if seq, err = awaitAck(ctx, f); err != nil {
			return w.writeErr(c.run, subj, err)
		}
		return nil
	}
	if e != nil {
		body, err := json.Marshal(e)
		if err != nil {
			return 0, err
		}
		// Stored only while the head is the one guessed: a writer that
		// guessed wrong leaves no entries to be purged.
		opts := []jetstream.PublishOpt{jetstream.WithExpectLastSequenceForSubject(prev, w.names.IndexHead(c.run))}
		if ttl := w.entryTTL(e); ttl > 0 {
			opts = append(opts, jetstream.WithMsgTTL(ttl))
		}
		for _, s := range Subjects(w.names, c.run, hd) {
			if err := send(s, body, opts); err != nil {
				return 0, err
			}
		}
	}
	body, err := json.Marshal(hd)
	if err != nil {
		return 0, err
	}
	opts := []jetstream.PublishOpt{jetstream.WithExpectLastSequencePerSubject(prev)}
	if c.deleted {
		opts = append(opts, jetstream.WithMsgTTL(deletedHeadTTL))
	}
	if err := send(w.names.IndexHead(c.run), body, opts); err != nil {
		return 0, err
	}
	for _, f := range acks {
		if seq, err = awaitAck(ctx, f); err != nil {
			return 0, w.writeErr(c.run, f.Msg().Subject, err)
		}
	}
	return seq, nil
}

// writeErr says which of run's index messages, on subj, was not written.
func (w *writer) writeErr(run, subj string, err error) error {
	if subj == w.names.IndexHead(run) {
		return fmt.Errorf("runindex: write the head of run %s: %w", run, err)
	}
	return fmt.Errorf("runindex: index run %s on %q: %w", run, subj, err)
}

// awaitAck waits for the ack of f and returns its sequence.
func awaitAck(ctx context.Context, f jetstream.PubAckFuture) (uint64, error) {
	select {
	case ack := <-f.Ok():
		return ack.Sequence, nil
	case err := <-f.Err():
		return 0, err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// clean asks the server to purge the subjects of stale that keep is
// without, up to sequence before (what a writer publishes on them later
// is newer and stays), and does not wait: readers already ignore them.
func (w *writer) clean(stale map[string]bool, keep []string, before uint64) {
	for s := range stale {
		if slices.Contains(keep, s) {
			continue
		}
		req := fmt.Appendf(nil, `{"filter":%q,"seq":%d}`, s, before)
		if err := w.js.Conn().PublishRequest(w.purgeAPI, w.discard, req); err != nil {
			w.log.Warn("runindex: purge of an old index subject not sent", slog.String("subject", s), slog.Any("error", err))
		}
	}
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
