package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
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

// A listing reads the index's buckets newest first (subjects.IndexBucket):
// maxSpan buckets at most in one read, sized so that about wantPerRead
// entries come back, and once the filter's remaining entries are
// thought to be at most fewPerFilter, all of them in one read.
const (
	maxSpan      = 1024
	wantPerRead  = 512
	fewPerFilter = 768
)

// hit is one index entry a listing kept.
type hit struct {
	seq uint64
	e   *wire.IndexEntry
}

// indexQuery is one listing over the run index.
type indexQuery struct {
	c        *Client
	m        *Matcher
	where    map[string]string
	attr     string // the first search attribute of where, or ""
	workflow string
	status   string
	// Stream bounds when the listing began (SortID).
	first, last uint64
}

// listByIndex answers a listing from the run index. It returns
// ErrNoIndex (wrapped) when the deployment has no index stream, or one
// of another shape (until a dispatcher rebuilds it).
func (c *Client) listByIndex(ctx context.Context, opts ListOptions, m *Matcher, after *cursor) (*RunPage, error) {
	wait := opts.Wait
	if wait == 0 {
		wait = DefaultIndexWait
	}
	off, shape, err := readIndexMarks(ctx, c.js, c.names)
	if err != nil {
		return nil, err
	}
	if off != nil {
		return &RunPage{IndexOff: off}, fmt.Errorf("%w since %s (dispatcher %s)", ErrIndexOff, off.Since, off.By)
	}
	if shape == 0 {
		return nil, fmt.Errorf("%w: stream %q does not exist (provision the deployment again: jetflow serve --provision)", ErrNoIndex, c.names.IndexStream())
	}
	if shape != subjects.IndexShape {
		return nil, fmt.Errorf("%w: stream %q holds an index of shape %d, not %d (a dispatcher of this version rebuilds it when it starts)", ErrNoIndex, c.names.IndexStream(), shape, subjects.IndexShape)
	}
	behind, lastRev, err := c.catchUp(ctx, wait)
	if err != nil {
		return nil, err
	}
	page := &RunPage{Behind: behind}
	f := opts.Filter
	q := &indexQuery{c: c, m: m, where: f.Where, workflow: f.Workflow, status: f.Status}
	if names := whereNames(f.Where); len(names) > 0 {
		q.attr = names[0]
	}
	var hits []hit
	switch opts.Sort {
	case SortUpdate:
		hits, err = q.newest(ctx, SortUpdate, lastRev, after, opts.Limit)
	case SortStart:
		hits, err = q.byStart(ctx, after, opts.Limit)
	default:
		hits, err = q.byID(ctx, after, opts.Limit)
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
	return int64(orderKey(sort, h.e)) //nolint:gosec // stream sequences fit in int64
}

// orderKey is the key of entry e in the order sort: the record revision
// (by update), the start sequence (by start), none (by id).
func orderKey(sort string, e *wire.IndexEntry) uint64 {
	switch sort {
	case SortUpdate:
		return e.RecordRev
	case SortStart:
		return e.StartSeq
	}
	return 0
}

// pattern is the subject filter of the query's entries in the order
// sort, in bucket b, or in every bucket when all.
func (q *indexQuery) pattern(sort string, b uint64, all bool) string {
	n := q.c.names
	switch {
	case sort == SortStart && all:
		return n.IndexStartsAll(q.workflow, q.status)
	case sort == SortStart:
		return n.IndexStarts(q.workflow, q.status, b)
	case q.attr != "" && all:
		return n.IndexAttrEntriesAll(q.attr, q.where[q.attr], q.workflow, q.status)
	case q.attr != "":
		return n.IndexAttrEntries(q.attr, q.where[q.attr], q.workflow, q.status, b)
	case all:
		return n.IndexEntriesAll(q.workflow, q.status)
	}
	return n.IndexEntries(q.workflow, q.status, b)
}

// byStart returns the limit+1 runs (all when limit is 0) that started
// last, after the cursor. A search attribute that few runs have is read
// whole and sorted here; otherwise the entries by start are read bucket
// by bucket.
func (q *indexQuery) byStart(ctx context.Context, after *cursor, limit int) ([]hit, error) {
	if q.attr != "" {
		hits, err := q.all(ctx, SortStart, after, limit)
		if !errors.Is(err, kvstore.ErrTooManyResults) {
			return hits, err
		}
	}
	top, err := q.c.lastInput(ctx)
	if err != nil {
		return nil, err
	}
	return q.newest(ctx, SortStart, top, after, limit)
}

// byID returns the limit+1 runs (all when limit is 0) first by run id
// after the cursor: it reads every entry of the filter (all).
func (q *indexQuery) byID(ctx context.Context, after *cursor, limit int) ([]hit, error) {
	rctx, cancel := readCtx(ctx)
	s, err := kvstore.BindLeader(rctx, q.c.js, q.c.names.IndexStream())
	cancel()
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("%w: stream %q does not exist (provision the deployment again: jetflow serve --provision)", ErrNoIndex, q.c.names.IndexStream())
	}
	if err != nil {
		return nil, fmt.Errorf("client: list runs: %w", err)
	}
	st := s.CachedInfo().State
	q.first, q.last = st.FirstSeq, st.LastSeq
	return q.all(ctx, SortID, after, limit)
}

// lastInput is the input stream's last sequence: no run started later.
func (c *Client) lastInput(ctx context.Context) (uint64, error) {
	ctx, cancel := readCtx(ctx)
	defer cancel()
	s, err := kvstore.BindLeader(ctx, c.js, c.names.InputStream())
	if err != nil {
		return 0, fmt.Errorf("client: list runs: read stream %q: %w", c.names.InputStream(), err)
	}
	return s.CachedInfo().State.LastSeq, nil
}

// newest returns the limit+1 runs (all when limit is 0) first in the
// order sort (newest key first, then by run id) that come after the
// cursor; no entry has a key above top. It reads the buckets of the
// order from the newest down, several in one multi-subject direct get:
// as many as the entries found so far say hold a page, and every
// remaining one at once when the filter's remaining entries are thought
// few. The server counts the subjects a read's filters match, that is
// the entries of the buckets it names, never the whole index, so a read
// costs what it returns; a page of a filter that keeps a fraction d of
// the runs reads about limit/d sequences' buckets.
func (q *indexQuery) newest(ctx context.Context, sort string, top uint64, after *cursor, limit int) ([]hit, error) {
	if after != nil {
		top = min(top, uint64(max(after.Key, 0))) //nolint:gosec // a sequence this listing printed
	}
	past := func(e *wire.IndexEntry) bool {
		k := orderKey(sort, e)
		return k <= top && (after == nil || k < uint64(after.Key) || k == uint64(after.Key) && e.Run > after.Run) //nolint:gosec // as above
	}
	var out []hit
	seen := map[string]bool{}
	full := func() bool { return limit > 0 && len(out) > limit }
	take := func(got []hit) error {
		slices.SortFunc(got, func(a, b hit) int {
			if c := cmp.Compare(orderKey(sort, b.e), orderKey(sort, a.e)); c != 0 {
				return c
			}
			return cmp.Compare(a.e.Run, b.e.Run)
		})
		// Verified a page at a time, not all that the read returned.
		for len(got) > 0 && !full() {
			n := len(got)
			if limit > 0 {
				need := limit + 1 - len(out)
				n = min(n, need+need/4+8)
			}
			chunk, err := q.verify(ctx, got[:n])
			if err != nil {
				return err
			}
			got = got[n:]
			for _, h := range chunk {
				if full() {
					break
				}
				if seen[h.e.Run] { // moved during the read: keep its first entry
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
		}
		return nil
	}
	const size = subjects.IndexBucketSize
	hi := subjects.IndexBucket(top) // the next bucket to read
	span := uint64(max(1, (2*limit+size-1)/size))
	// Read so far: the sequences from the lowest bucket read to top,
	// and the entries they held.
	var covered, found uint64
	halved := false // the last read returned too many: read half as many buckets
	for !full() {
		if covered > 0 && limit > 0 && !halved {
			// The next read: as many buckets as hold the rest of the
			// page, half again, at the density so far; at most about
			// wantPerRead entries. Or every bucket left at once, when
			// the density says that is few entries and no more than a
			// read of buckets would return, or than one could reach.
			need := uint64(limit + 1 - len(out)) //nolint:gosec // a count
			left := found * (hi + 1) * size / covered
			want := span * 4
			if found > 0 {
				want = (need*3*covered/2 + found*size - 1) / (found * size)
			}
			if left <= fewPerFilter && (found == 0 || left <= 2*need || want > maxSpan) {
				// The subjects of what is left, from the server's memory,
				// then only the entries the page needs; failing that
				// (too many, or no answer), every entry left at once.
				if subs, err := q.c.indexSubjects(ctx, q.pattern(sort, 0, true), maxRest); err == nil {
					return out, q.rest(ctx, subs, hi, past, take, func() int {
						if limit == 0 {
							return kvstore.MaxDirectLasts
						}
						return max(0, limit+1-len(out))
					})
				}
				got, _, err := q.lasts(ctx, []string{q.pattern(sort, 0, true)}, past)
				if err == nil {
					return out, take(got)
				}
				if !errors.Is(err, kvstore.ErrTooManyResults) {
					return nil, err
				}
			}
			if found > 0 {
				want = min(want, wantPerRead*covered/(found*size))
			}
			span = max(1, min(want, maxSpan))
		}
		span = min(span, hi+1)
		pats := make([]string, 0, span)
		for b := range span {
			pats = append(pats, q.pattern(sort, hi-b, false))
		}
		got, n, err := q.lasts(ctx, pats, past)
		if errors.Is(err, kvstore.ErrTooManyResults) && span > 1 {
			span, halved = span/2, true
			continue
		}
		if err != nil {
			return nil, err
		}
		halved = false
		if err := take(got); err != nil {
			return nil, err
		}
		found, covered = found+n, top+1-(hi+1-span)*size
		if hi < span {
			break // bucket 0 read
		}
		hi -= span
		if limit == 0 {
			span = maxSpan
		}
	}
	return out, nil
}

// maxRest is how many subjects rest takes from the server's subject
// index; more, and the listing goes on reading buckets.
const maxRest = 4 * kvstore.MaxDirectLasts

// rest reads the entries on subs (the subjects of the query's entries
// in one order, from indexSubjects) in buckets hi and below, newest
// bucket first, passing each read's entries that pass keep to take,
// until need says the page holds enough (0) or none is left. It reads
// only the entries of the buckets the page still needs, whole buckets at
// a time (their order within a bucket is known once read). So a page of
// a sparse filter loads the blocks that hold its own entries, not those
// of every entry of the filter: a block read cold costs a load of
// megabytes (twice: the server builds the block's subject index, drops
// the block, then loads it again for the messages), and the entries of
// a rare search attribute lie one in a block.
func (q *indexQuery) rest(ctx context.Context, subs []string, hi uint64, keep func(*wire.IndexEntry) bool, take func([]hit) error, need func() int) error {
	type entry struct {
		bucket  uint64
		subject string
	}
	list := make([]entry, 0, len(subs))
	for _, s := range subs {
		b, ok := q.c.names.IndexSubjectBucket(s)
		if !ok || b > hi {
			continue
		}
		list = append(list, entry{b, s})
	}
	slices.SortFunc(list, func(a, b entry) int {
		if c := cmp.Compare(b.bucket, a.bucket); c != 0 {
			return c
		}
		return cmp.Compare(a.subject, b.subject)
	})
	for len(list) > 0 {
		n := need()
		if n <= 0 {
			return nil
		}
		// n subjects, then the rest of the last one's bucket; when that
		// is more than one read names, the whole buckets that fit in it.
		i := min(n, len(list))
		for i < len(list) && list[i].bucket == list[i-1].bucket {
			i++
		}
		if i > kvstore.MaxDirectLasts {
			i = kvstore.MaxDirectLasts
			for i > 1 && list[i].bucket == list[i-1].bucket {
				i--
			}
			if i == 1 { // no bucket holds that many entries of an order
				i = kvstore.MaxDirectLasts
			}
		}
		names := make([]string, i)
		for j, e := range list[:i] {
			names[j] = e.subject
		}
		list = list[i:]
		got, _, err := q.lasts(ctx, names, keep)
		if err != nil {
			return err
		}
		if err := take(got); err != nil {
			return err
		}
	}
	return nil
}

// indexSubjects returns the subjects of the index stream that filter
// matches, from one stream info request: the server answers it from its
// subject index, in memory. More than most is kvstore.ErrTooManyResults.
func (c *Client) indexSubjects(ctx context.Context, filter string, most int) ([]string, error) {
	ctx, cancel := readCtx(ctx)
	defer cancel()
	counts, _, err := kvstore.SubjectCounts(ctx, c.js, c.names.IndexStream(), filter, most)
	if err != nil {
		return nil, fmt.Errorf("client: list runs: %w", err)
	}
	return slices.Collect(maps.Keys(counts)), nil
}

// lasts reads the last entry of every subject that patterns match (each
// subject holds one) with one direct get, and keeps those that pass keep
// and cheap; it also returns how many entries came back. More than
// kvstore.MaxDirectLasts entries is kvstore.ErrTooManyResults.
func (q *indexQuery) lasts(ctx context.Context, patterns []string, keep func(*wire.IndexEntry) bool) ([]hit, uint64, error) {
	var got []hit
	var n uint64
	var bad error
	err := kvstore.DirectLasts(ctx, q.c.js, q.c.names.IndexStream(), patterns, 0, func(m *jetstream.RawStreamMsg) {
		n++
		if bad != nil {
			return
		}
		var e wire.IndexEntry
		if err := json.Unmarshal(m.Data, &e); err != nil {
			bad = fmt.Errorf("client: index entry %d on %q: %w", m.Sequence, m.Subject, err)
			return
		}
		if keep(&e) && q.cheap(&e) {
			got = append(got, hit{seq: m.Sequence, e: &e})
		}
	})
	if errors.Is(err, kvstore.ErrTooManyResults) {
		return nil, 0, err
	}
	if err != nil {
		return nil, 0, fmt.Errorf("client: list runs: %w", err)
	}
	return got, n, bad
}

// all reads every entry of the filter by update and sorts them: newest
// start first (SortStart) or by run id; it continues after the cursor,
// and stops once it holds limit+1 runs (0: all). For SortStart, a
// filter of more than kvstore.MaxDirectLasts entries is
// kvstore.ErrTooManyResults; for SortID it is read in batches.
func (q *indexQuery) all(ctx context.Context, sort string, after *cursor, limit int) ([]hit, error) {
	got, _, err := q.lasts(ctx, []string{q.pattern(SortUpdate, 0, true)}, func(*wire.IndexEntry) bool { return true })
	if errors.Is(err, kvstore.ErrTooManyResults) && sort == SortID {
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
	stream, filter := q.c.names.IndexStream(), q.pattern(SortUpdate, 0, true)
	for lo < hi {
		next, n := lo, 0
		var bad error
		got, err := kvstore.DirectBatch(ctx, q.c.js, stream, filter, lo, int(min(hi-lo, indexBatch)), func(m *jetstream.RawStreamMsg) {
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
// check and the entry tells: the run ids named, revision, state, start times, the other
// search attributes, a removed run (only listed when asked for).
func (q *indexQuery) cheap(e *wire.IndexEntry) bool {
	f, m := q.m.f, q.m
	switch {
	case e.Status == wire.StatusRemoved && q.status != wire.StatusRemoved,
		!m.named(e.Run),
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
// while no dispatcher has made the indexer's consumer, which a starting
// dispatcher may be about to do), and the run bucket's last revision when
// it was called: no entry names a later one.
func (c *Client) catchUp(ctx context.Context, wait time.Duration) (uint64, uint64, error) {
	n := c.names
	rctx, cancel := readCtx(ctx)
	runs, err := kvstore.BindLeader(rctx, c.js, n.KVStream(n.RunBucket()))
	cancel()
	if err != nil {
		return 0, 0, fmt.Errorf("client: list runs: read stream %q: %w", n.KVStream(n.RunBucket()), err)
	}
	state := runs.CachedInfo().State
	target := state.LastSeq
	deadline := time.Now().Add(wait)
	pause := time.Millisecond
	var behind uint64
	for {
		rctx, cancel := readCtx(ctx)
		cons, err := c.js.Consumer(rctx, n.KVStream(n.RunBucket()), n.IndexerConsumer())
		cancel()
		switch {
		case errors.Is(err, jetstream.ErrConsumerNotFound):
			if behind = state.Msgs; behind == 0 {
				return 0, target, nil
			}
		case err != nil:
			return behind, target, nil
		default:
			info := cons.CachedInfo()
			behind = info.NumPending + uint64(info.NumAckPending) //nolint:gosec // a count
			if behind == 0 || info.AckFloor.Stream >= target {
				return 0, target, nil
			}
		}
		if wait <= 0 || time.Now().Add(pause).After(deadline) {
			return behind, target, nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return behind, target, nil
		case <-t.C:
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// readCtx bounds one JetStream API request of a listing by
// waitReadTimeout: a request nobody answers (an R3 consumer or stream
// between leaders, a reply lost to a reconnect) held a listing until its
// caller's context ended, three minutes in TestIndexOnAClusterOfThree.
func readCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, waitReadTimeout)
}

// ErrIndexOff is wrapped when the deployment's dispatchers keep no run
// index (they run with it off, and left its off mark): a listing reads
// the run records instead.
var ErrIndexOff = errors.New("the run index is off")

// ReadIndexOff returns the index's off mark, nil when there is none (the
// index is kept) or no index stream.
func ReadIndexOff(ctx context.Context, js jetstream.JetStream, n subjects.Names) (*wire.IndexOff, error) {
	off, _, err := readIndexMarks(ctx, js, n)
	return off, err
}

// ReadIndexShape returns the shape the index's entries have
// (subjects.IndexShape), from its shape mark: 1 when there is none
// (an index from before the mark), 0 when there is no index stream.
func ReadIndexShape(ctx context.Context, js jetstream.JetStream, n subjects.Names) (int, error) {
	_, shape, err := readIndexMarks(ctx, js, n)
	return shape, err
}

// readIndexMarks reads the index's off mark (nil: none) and its shape
// (as ReadIndexShape) with one direct get.
func readIndexMarks(ctx context.Context, js jetstream.JetStream, n subjects.Names) (*wire.IndexOff, int, error) {
	var off *wire.IndexOff
	shape := 1
	err := kvstore.DirectLasts(ctx, js, n.IndexStream(), []string{n.IndexOff(), n.IndexShapeMark()}, 0, func(m *jetstream.RawStreamMsg) {
		switch m.Subject {
		case n.IndexOff():
			off = &wire.IndexOff{}
			if err := json.Unmarshal(m.Data, off); err != nil {
				off.Since = "an unknown time"
			}
		case n.IndexShapeMark():
			var mark wire.IndexShapeMark
			if json.Unmarshal(m.Data, &mark) == nil {
				shape = mark.Shape
			}
		}
	})
	if errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, nats.ErrNoResponders) {
		return nil, 0, nil // no index stream
	}
	if err != nil {
		return nil, 0, fmt.Errorf("client: read the run index's marks: %w", err)
	}
	return off, shape, nil
}
