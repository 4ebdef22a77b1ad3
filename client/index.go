package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// ErrNoIndex is wrapped when a listing needs the run index (a --where,
// --status removed) and the deployment has none: provision it.
var ErrNoIndex = errors.New("no run index")

// indexBatch is how many entries one read of the index asks for.
const indexBatch = 4096

// A newest-first page first reads denseWindows windows of denseWindow
// sequences (or twice its limit) by sequence; then windows through the
// subject filter, of firstWindow sequences, each further one four times
// wider.
const (
	denseWindow  = 256
	denseWindows = 4
	firstWindow  = 4096
)

// hit is one index entry a listing kept.
type hit struct {
	seq uint64
	e   *wire.IndexEntry
}

// indexQuery is one listing over the run index.
type indexQuery struct {
	c      *Client
	m      *Matcher
	where  map[string]string
	status string
	filter string
	// Stream bounds when the listing began.
	first, last uint64
}

// listByIndex answers a listing from the run index. It returns
// ErrNoIndex (wrapped) when the deployment has no index stream.
func (c *Client) listByIndex(ctx context.Context, opts ListOptions, m *Matcher, after *cursor) (*RunPage, error) {
	wait := opts.Wait
	if wait == 0 {
		wait = DefaultIndexWait
	}
	off, err := ReadIndexOff(ctx, c.js, c.names)
	if err != nil {
		return nil, err
	}
	if off != nil {
		return &RunPage{IndexOff: off}, fmt.Errorf("%w since %s (dispatcher %s)", ErrIndexOff, off.Since, off.By)
	}
	page := &RunPage{Behind: c.catchUp(ctx, wait)}
	// The stream's bounds as of after the wait.
	s, err := c.js.Stream(ctx, c.names.IndexStream())
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("%w: stream %q does not exist (provision the deployment again: jetflow serve --provision)", ErrNoIndex, c.names.IndexStream())
	}
	if err != nil {
		return nil, fmt.Errorf("client: list runs: %w", err)
	}
	st := s.CachedInfo().State
	f := opts.Filter
	q := &indexQuery{c: c, m: m, where: f.Where, status: f.Status, first: st.FirstSeq, last: st.LastSeq}
	if names := whereNames(f.Where); len(names) > 0 {
		q.filter = c.names.IndexAttrEntries(names[0], f.Where[names[0]], f.Workflow, f.Status)
	} else {
		q.filter = c.names.IndexEntries(f.Workflow, f.Status)
	}
	var hits []hit
	if opts.Sort == SortUpdate {
		upper := q.last + 1
		if after != nil {
			upper = uint64(after.Key) //nolint:gosec // a sequence this listing printed
		}
		hits, err = q.newest(ctx, upper, opts.Limit)
	} else {
		hits, err = q.all(ctx, opts.Sort, after, opts.Limit)
	}
	if err != nil {
		return nil, err
	}
	if opts.Limit > 0 && len(hits) > opts.Limit {
		hits = hits[:opts.Limit]
		last := hits[len(hits)-1]
		page.Next = encodeCursor(cursor{Sort: opts.Sort, Key: q.key(opts.Sort, last), Run: last.e.Run})
	}
	page.Runs = make([]Listed, len(hits))
	for i, h := range hits {
		page.Runs[i] = listed(h.e)
	}
	if opts.Full {
		if err := c.fill(ctx, page); err != nil {
			return nil, err
		}
	}
	return page, nil
}

// key is the sort key of h that a cursor keeps.
func (q *indexQuery) key(sort string, h hit) int64 {
	switch sort {
	case SortUpdate:
		return int64(h.seq) //nolint:gosec // stream sequences fit in int64
	case SortStart:
		return int64(h.e.StartSeq) //nolint:gosec // stream sequences fit in int64
	}
	return 0
}

// newest returns the limit+1 runs (all when limit is 0) that changed
// last before sequence upper (exclusive), the most recent first. It
// reads the index backwards in windows of sequences: first a few windows
// of every message, read by sequence and filtered here, which answers a
// broad filter in about one page of reads; then, for a narrow filter,
// windows that grow fourfold read through the subject filter, whose
// cost follows the runs the filter matches. Neither follows the number
// of runs.
func (q *indexQuery) newest(ctx context.Context, upper uint64, limit int) ([]hit, error) {
	var out []hit
	seen := map[string]bool{}
	full := func() bool { return limit > 0 && len(out) > limit }
	take := func(got []hit) error {
		slices.Reverse(got)
		got, err := q.verify(ctx, got)
		if err != nil {
			return err
		}
		for _, h := range got {
			if full() {
				break
			}
			if seen[h.e.Run] { // moved during the read: keep its newest entry
				continue
			}
			ok, err := q.match(ctx, h.e)
			if err != nil {
				return err
			}
			if ok {
				seen[h.e.Run] = true
				out = append(out, h)
			}
		}
		return nil
	}
	window := uint64(max(denseWindow, 2*limit))
	for range denseWindows {
		if upper <= q.first || full() {
			return out, nil
		}
		lo := max(q.first, upper-min(window, upper))
		got, err := q.readSeqs(ctx, lo, upper)
		if err != nil {
			return nil, err
		}
		if err := take(got); err != nil {
			return nil, err
		}
		upper = lo
		if len(got) == 0 {
			break // nothing in a whole window: a narrow filter, for lasts
		}
	}
	if upper <= q.first || full() {
		return out, nil
	}
	// A filter of at most MaxDirectLasts runs: all of them in one read,
	// straight from the stream's subject index.
	got, err := q.lasts(ctx, upper)
	if err == nil {
		return out, take(got)
	}
	if !errors.Is(err, kvstore.ErrTooManyResults) {
		return nil, err
	}
	window = uint64(firstWindow)
	for upper > q.first && !full() {
		lo := q.first
		if upper-q.first > window {
			lo = upper - window
		}
		var got []hit
		err := q.read(ctx, lo, upper, func(h hit) {
			if q.cheap(h.e) {
				got = append(got, h)
			}
		})
		if err != nil {
			return nil, err
		}
		if err := take(got); err != nil {
			return nil, err
		}
		upper, window = lo, window*4
	}
	return out, nil
}

// lasts reads every entry on the query's filter stored below sequence
// upper with one direct get of the last message of each subject (each
// subject holds one), and keeps those that pass cheap, in stream order.
// More than kvstore.MaxDirectLasts entries is kvstore.ErrTooManyResults.
func (q *indexQuery) lasts(ctx context.Context, upper uint64) ([]hit, error) {
	var got []hit
	var bad error
	// Asked of the whole stream, not up to upper: the server then reads
	// only each subject's last block instead of walking every block back.
	err := kvstore.DirectLasts(ctx, q.c.js, q.c.names.IndexStream(), []string{q.filter}, 0, func(m *jetstream.RawStreamMsg) {
		if bad != nil || m.Sequence >= upper {
			return
		}
		var e wire.IndexEntry
		if err := json.Unmarshal(m.Data, &e); err != nil {
			bad = fmt.Errorf("client: index entry %d on %q: %w", m.Sequence, m.Subject, err)
			return
		}
		if q.cheap(&e) {
			got = append(got, hit{seq: m.Sequence, e: &e})
		}
	})
	if errors.Is(err, kvstore.ErrTooManyResults) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("client: list runs: %w", err)
	}
	slices.SortFunc(got, func(a, b hit) int { return cmp.Compare(a.seq, b.seq) })
	return got, bad
}

// readSeqs reads every message from lo to hi (exclusive) by sequence and
// keeps the entries on the query's filter that pass cheap, in stream
// order.
func (q *indexQuery) readSeqs(ctx context.Context, lo, hi uint64) ([]hit, error) {
	seqs := make([]uint64, 0, hi-lo)
	for s := lo; s < hi; s++ {
		seqs = append(seqs, s)
	}
	var got []hit
	var bad error
	err := kvstore.DirectSeqs(ctx, q.c.js, q.c.names.IndexStream(), seqs, func(m *jetstream.RawStreamMsg) {
		if bad != nil || !subjectMatch(q.filter, m.Subject) {
			return
		}
		var e wire.IndexEntry
		if err := json.Unmarshal(m.Data, &e); err != nil {
			bad = fmt.Errorf("client: index entry %d on %q: %w", m.Sequence, m.Subject, err)
			return
		}
		if q.cheap(&e) {
			got = append(got, hit{seq: m.Sequence, e: &e})
		}
	})
	if err != nil {
		return nil, fmt.Errorf("client: list runs: %w", err)
	}
	return got, bad
}

// subjectMatch is whether subject matches filter, whose tokens may be
// "*" (the index's filters use no ">").
func subjectMatch(filter, subject string) bool {
	for {
		fi, si := strings.IndexByte(filter, '.'), strings.IndexByte(subject, '.')
		ft, st := filter, subject
		if fi >= 0 {
			ft = filter[:fi]
		}
		if si >= 0 {
			st = subject[:si]
		}
		if ft != "*" && ft != st {
			return false
		}
		if fi < 0 || si < 0 {
			return fi < 0 && si < 0
		}
		filter, subject = filter[fi+1:], subject[si+1:]
	}
}

// all reads every entry of the filter and sorts them: newest start first
// (SortStart) or by run id; it continues after the cursor, and stops
// once it holds limit+1 runs (0: all).
func (q *indexQuery) all(ctx context.Context, sort string, after *cursor, limit int) ([]hit, error) {
	got, err := q.lasts(ctx, q.last+1)
	if errors.Is(err, kvstore.ErrTooManyResults) {
		got = nil
		err = q.read(ctx, q.first, q.last+1, func(h hit) {
			if q.cheap(h.e) {
				got = append(got, h)
			}
		})
	}
	if err != nil {
		return nil, err
	}
	order := func(a hit, ka int64, b hit, kb int64) int {
		if ka != kb {
			return cmp.Compare(kb, ka)
		}
		if c := cmp.Compare(a.e.Run, b.e.Run); c != 0 {
			return c
		}
		return cmp.Compare(b.seq, a.seq) // a run's newest entry first
	}
	slices.SortFunc(got, func(a, b hit) int { return order(a, q.key(sort, a), b, q.key(sort, b)) })
	if after != nil {
		i, _ := slices.BinarySearchFunc(got, after, func(h hit, c *cursor) int {
			if k := q.key(sort, h); k != c.Key {
				return cmp.Compare(c.Key, k)
			}
			if h.e.Run <= c.Run {
				return -1
			}
			return 1
		})
		got = got[i:]
	}
	var out []hit
	for len(got) > 0 && (limit == 0 || len(out) <= limit) {
		chunk := got[:min(len(got), kvstore.MaxDirectLasts)]
		got = got[len(chunk):]
		valid, err := q.verify(ctx, chunk)
		if err != nil {
			return nil, err
		}
		for _, h := range valid {
			if limit > 0 && len(out) > limit {
				break
			}
			if len(out) > 0 && out[len(out)-1].e.Run == h.e.Run {
				continue
			}
			ok, err := q.match(ctx, h.e)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, h)
			}
		}
	}
	return out, nil
}

// verify keeps, in order, the hits whose run's head names a revision no
// later than the entry's: an entry left behind by a crashed or beaten
// writer names an older one, a deleted run's head a later one. One
// direct get per 1024 hits.
func (q *indexQuery) verify(ctx context.Context, hits []hit) ([]hit, error) {
	heads := map[string]uint64{}
	for i := 0; i < len(hits); i += kvstore.MaxDirectLasts {
		var subs []string
		for _, h := range hits[i:min(len(hits), i+kvstore.MaxDirectLasts)] {
			subs = append(subs, q.c.names.IndexHead(h.e.Run))
		}
		slices.Sort(subs)
		subs = slices.Compact(subs)
		err := kvstore.DirectLasts(ctx, q.c.js, q.c.names.IndexStream(), subs, 0, func(m *jetstream.RawStreamMsg) {
			var h wire.IndexHead
			if json.Unmarshal(m.Data, &h) == nil {
				heads[m.Subject] = h.RecordRev
			}
		})
		if err != nil {
			return nil, fmt.Errorf("client: list runs: %w", err)
		}
	}
	out := hits[:0:0]
	for _, h := range hits {
		if rev, ok := heads[q.c.names.IndexHead(h.e.Run)]; ok && h.e.RecordRev >= rev {
			out = append(out, h)
		}
	}
	return out, nil
}

// read calls fn with every entry on the query's subject filter from
// sequence lo up to hi (exclusive), in stream order.
func (q *indexQuery) read(ctx context.Context, lo, hi uint64, fn func(hit)) error {
	stream := q.c.names.IndexStream()
	for lo < hi {
		next, n := lo, 0
		var bad error
		got, err := kvstore.DirectBatch(ctx, q.c.js, stream, q.filter, lo, int(min(hi-lo, indexBatch)), func(m *jetstream.RawStreamMsg) {
			next = m.Sequence + 1
			if m.Sequence >= hi || bad != nil {
				return
			}
			var e wire.IndexEntry
			if err := json.Unmarshal(m.Data, &e); err != nil {
				bad = fmt.Errorf("client: index entry %d on %q: %w", m.Sequence, m.Subject, err)
				return
			}
			n++
			fn(hit{seq: m.Sequence, e: &e})
		})
		switch {
		case err != nil:
			return fmt.Errorf("client: list runs: %w", err)
		case bad != nil:
			return bad
		case got < int(min(hi-lo, indexBatch)) || next >= hi:
			return nil
		}
		lo = next
	}
	return nil
}

// cheap is whether the entry passes what the subject filter did not
// check and the entry tells: revision, state, start times, the other
// search attributes, a removed run (only listed when asked for).
func (q *indexQuery) cheap(e *wire.IndexEntry) bool {
	f, m := q.m.f, q.m
	switch {
	case e.Status == wire.StatusRemoved && q.status != wire.StatusRemoved,
		f.Revision != "" && e.Revision != f.Revision,
		f.State != "" && !inState(activeOf(e), f.State),
		!m.before.IsZero() && e.StartSeq >= m.beforeSeq,
		!m.after.IsZero() && (e.StartSeq == 0 || e.StartSeq < m.afterSeq):
		return false
	}
	for name, want := range q.where {
		if v, ok := e.Search[name]; !ok || v != want {
			return false
		}
	}
	return true
}

// activeOf is the entry's active states.
func activeOf(e *wire.IndexEntry) []string {
	if e.Active == nil {
		return []string{e.State}
	}
	return e.Active
}

// match is whether the run passes --match, which reads its record.
func (q *indexQuery) match(ctx context.Context, e *wire.IndexEntry) (bool, error) {
	m := q.m
	if m.q == nil || e.Status == wire.StatusRemoved {
		return m.q == nil, nil
	}
	data, _, err := q.c.store.Get(ctx, e.Run)
	if errors.Is(err, kvstore.ErrRunNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("client: list runs: read run %s for --match: %w", e.Run, err)
	}
	r, err := Decode(e.Run, data)
	if err != nil {
		return false, nil //nolint:nilerr // removed or unreadable since it was indexed: not listed
	}
	return m.Match(r)
}

// listed is what a listing shows of an entry.
func listed(e *wire.IndexEntry) Listed {
	return Listed{
		Status:   &wire.Status{Run: e.Run, Workflow: e.Workflow, Revision: e.Revision, Status: e.Status, State: e.State, Time: e.Time},
		Updated:  time.Unix(0, e.Updated),
		StartSeq: e.StartSeq,
		Search:   e.Search,
	}
}

// fill replaces each listed status by the one its record holds (result
// and error included).
func (c *Client) fill(ctx context.Context, page *RunPage) error {
	for i, l := range page.Runs {
		if l.Status.Status == wire.StatusRemoved {
			continue
		}
		data, _, err := c.store.Get(ctx, l.Status.Run)
		if errors.Is(err, kvstore.ErrRunNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("client: list runs: read run %s: %w", l.Status.Run, err)
		}
		r, err := Decode(l.Status.Run, data)
		if err != nil {
			page.Skipped = append(page.Skipped, err)
			continue
		}
		page.Runs[i].Status = r.Status
	}
	return nil
}

// DefaultIndexWait is how long a listing waits, by default, for the
// index to hold every run change made before it began.
const DefaultIndexWait = 2 * time.Second

// catchUp waits, up to wait, until the dispatchers have indexed every
// change the run bucket held when it was called, so that a listing sees
// the caller's own writes. It returns how many changes were still not
// indexed (0 when caught up or when that cannot be read; every record
// when no dispatcher has made the indexer's consumer yet).
func (c *Client) catchUp(ctx context.Context, wait time.Duration) uint64 {
	n := c.names
	runs, err := c.js.Stream(ctx, n.KVStream(n.RunBucket()))
	if err != nil {
		return 0
	}
	target := runs.CachedInfo().State.LastSeq
	cons, err := c.js.Consumer(ctx, n.KVStream(n.RunBucket()), n.IndexerConsumer())
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return runs.CachedInfo().State.Msgs // no dispatcher has indexed anything yet
	}
	if err != nil {
		return 0
	}
	deadline := time.Now().Add(wait)
	pause := time.Millisecond
	info := cons.CachedInfo()
	for {
		behind := info.NumPending + uint64(info.NumAckPending) //nolint:gosec // a count
		if behind == 0 || info.AckFloor.Stream >= target {
			return 0
		}
		if wait <= 0 || time.Now().Add(pause).After(deadline) {
			return behind
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return behind
		case <-t.C:
		}
		pause = min(2*pause, 100*time.Millisecond)
		if info, err = cons.Info(ctx); err != nil {
			return behind
		}
	}
}

// ErrIndexOff is wrapped when the deployment's dispatchers keep no run
// index (they run with it off, and left its off mark): a listing reads
// the run records instead.
var ErrIndexOff = errors.New("the run index is off")

// ReadIndexOff returns the index's off mark, nil when there is none (the
// index is kept) or no index stream.
func ReadIndexOff(ctx context.Context, js jetstream.JetStream, n subjects.Names) (*wire.IndexOff, error) {
	m, err := kvstore.DirectLast(ctx, js, n.IndexStream(), n.IndexOff())
	if errors.Is(err, kvstore.ErrNoKey) || errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, nats.ErrNoResponders) {
		return nil, nil // no mark, or no index stream to hold one
	}
	if err != nil {
		return nil, fmt.Errorf("client: read the run index's off mark: %w", err)
	}
	var off wire.IndexOff
	if err := json.Unmarshal(m.Data, &off); err != nil {
		off.Since = "an unknown time"
	}
	return &off, nil
}
