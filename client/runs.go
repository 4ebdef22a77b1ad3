package client

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/wire"
)

// Listed is one run a filter matched.
type Listed struct {
	Status *wire.Status
	// Updated is when the run's record last changed (server time).
	Updated time.Time
	// StartSeq is the input stream sequence of the run's start: runs
	// started later have higher ones (0 when the record does not say).
	StartSeq uint64
	// Search holds the run's search attributes (from the run index).
	Search map[string]string
}

// runLister is a run store that can read every record in one pass, as
// *kvstore.RunStore does.
type runLister interface {
	List(ctx context.Context, keep func(kvstore.Entry) bool) ([]kvstore.Entry, error)
}

func (c *Client) lister(ctx context.Context) (runLister, error) {
	if l, ok := c.store.(runLister); ok {
		return l, nil
	}
	rs, err := kvstore.OpenRunStore(ctx, c.js, c.names)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return rs, nil
}

// ErrNoSearch is wrapped when a filter with search attribute conditions
// (Where) is answered by reading the run records and the client has no
// Config.Search to learn the runs' attributes with.
var ErrNoSearch = errors.New("no search attribute declarations")

// Matching reads every run record (one pass over the run bucket, no index)
// and returns the runs m matches, ordered by run id. A record that cannot
// be decoded is left out and reported in skipped; a --match evaluation
// error ends the scan with that error. m must be bound (Matcher.Bind)
// when it has start-time bounds. A filter with Where needs Config.Search:
// each run's attributes are read from its record as the index would keep
// them.
func (c *Client) Matching(ctx context.Context, m *Matcher) (runs []Listed, skipped []error, err error) {
	where := len(m.f.Where) > 0
	if where && c.cfg.Search == nil {
		return nil, nil, fmt.Errorf("client: list runs: %w: this client cannot answer where %v without the run index (give Config.Search)", ErrNoSearch, m.f.Where)
	}
	l, err := c.lister(ctx)
	if err != nil {
		return nil, nil, err
	}
	var matchErr error
	_, err = l.List(ctx, func(e kvstore.Entry) bool {
		if matchErr != nil {
			return false
		}
		r, err := Decode(e.RunID, e.Data)
		if errors.Is(err, runrecord.ErrRemoved) {
			return false // removed by retention: a tombstone, no run to list
		}
		if err != nil {
			skipped = append(skipped, err)
			return false
		}
		if where {
			paths, err := c.cfg.Search(r.Status.Workflow, r.Status.Revision)
			if err != nil {
				matchErr = fmt.Errorf("run %s: search attributes of %s@%s: %w", r.ID, r.Status.Workflow, r.Status.Revision, err)
				return false
			}
			r.Search = SearchValues(r.State.Context.Input, r.State.Context.Data, paths)
		}
		ok, err := m.Match(r)
		switch {
		case err != nil:
			matchErr = err
		case ok:
			runs = append(runs, Listed{Status: r.Status, Updated: e.Updated, StartSeq: r.StartSeq, Search: r.Search})
		}
		return false
	})
	if err == nil {
		err = matchErr
	}
	if err != nil {
		return nil, nil, fmt.Errorf("client: list runs: %w", err)
	}
	slices.SortFunc(runs, func(a, b Listed) int { return cmp.Compare(a.Status.Run, b.Status.Run) })
	return runs, skipped, nil
}

// Orders of ListRuns.
const (
	SortID     = "id"     // by run id, ascending
	SortStart  = "start"  // newest start first
	SortUpdate = "update" // most recently updated first
)

// ListOptions select and page a listing.
type ListOptions struct {
	Filter wire.RunFilter
	// Sort is SortID (the default), SortStart or SortUpdate.
	Sort string
	// Limit caps the runs of a page; 0 means all.
	Limit int
	// Cursor continues after the page that returned it as Next.
	Cursor string
	// Full reads each listed run's record for its whole status (result
	// and error); an index entry has the rest. Default false.
	Full bool
	// Wait is how long a listing from the index first waits for the
	// index to hold every run change made before the listing began
	// (read-your-writes); negative does not wait. Default
	// DefaultIndexWait (2s).
	Wait time.Duration
	// Scan reads every run record instead of the run index: slower, but
	// as of now, where the index follows the records by a moment (bulk
	// jobs scan too). Filter.Where needs Config.Search; Filter.Status
	// "removed" needs the index. Default false.
	Scan bool
}

// RunPage is one page of a listing.
type RunPage struct {
	Runs []Listed
	// Next is the cursor of the next page, empty on the last one.
	Next string
	// Skipped are the records that could not be read.
	Skipped []error
	// Behind is how many run changes the dispatchers had still not
	// indexed when the listing gave up waiting (ListOptions.Wait): the
	// runs listed may lag by those.
	Behind uint64
	// Scanned says the listing read the run records, not the index.
	Scanned bool
	// IndexOff is the index's off mark when the listing read the run
	// records because the dispatchers keep no index (ErrIndexOff).
	IndexOff *wire.IndexOff
}

// cursor is where a page ended: the sort key and run id of its last run.
type cursor struct {
	Sort string `json:"s"`
	Key  int64  `json:"k,omitempty"`
	Run  string `json:"r"`
}

// ListRuns returns the runs matching opts.Filter, sorted
// and paged. It reads the run index (package runindex): a sort by
// update time reads about the page, whatever the number of runs; a sort
// by start time or id reads every index entry the workflow, status and
// first search attribute select. The index follows the run records by a
// moment (RunPage.Behind). A deployment provisioned before the index,
// one whose dispatchers run with the index off (RunPage.IndexOff), or
// opts.Scan, reads every record instead. A cursor is valid for the sort
// it came from; runs that change between pages move within the order (a
// sort by update time may show a run twice, or skip it).
func (c *Client) ListRuns(ctx context.Context, opts ListOptions) (*RunPage, error) {
	if opts.Sort == "" {
		opts.Sort = SortID
	}
	if opts.Sort != SortID && opts.Sort != SortStart && opts.Sort != SortUpdate {
		return nil, fmt.Errorf("%w: sort %q is not one of %s, %s, %s", ErrBadFilter, opts.Sort, SortID, SortStart, SortUpdate)
	}
	var after *cursor
	if opts.Cursor != "" {
		var err error
		if after, err = decodeCursor(opts.Cursor, opts.Sort); err != nil {
			return nil, err
		}
	}
	f := opts.Filter
	removed := f.Status == wire.StatusRemoved
	if removed {
		f.Status = "" // a listing-only status: CompileFilter does not know it
	}
	m, err := CompileFilter(f)
	if err != nil {
		return nil, err
	}
	if err := m.Bind(ctx, c.js, c.names); err != nil {
		return nil, err
	}
	var off *wire.IndexOff
	if !opts.Scan {
		page, err := c.listByIndex(ctx, opts, m, after)
		switch {
		case errors.Is(err, ErrIndexOff) && removed:
			return nil, fmt.Errorf("%w: --status %s reads the run index: %w", ErrBadFilter, wire.StatusRemoved, err)
		case errors.Is(err, ErrIndexOff):
			off = page.IndexOff
		case !errors.Is(err, ErrNoIndex) || removed:
			return page, err
		}
	}
	if removed {
		return nil, fmt.Errorf("%w: --status %s reads the run index; a scan cannot answer it", ErrBadFilter, wire.StatusRemoved)
	}
	page, err := c.listByScan(ctx, opts, m, after)
	if page != nil {
		page.IndexOff = off
	}
	return page, err
}

// listByScan is ListRuns over every run record.
func (c *Client) listByScan(ctx context.Context, opts ListOptions, m *Matcher, after *cursor) (*RunPage, error) {
	runs, skipped, err := c.Matching(ctx, m)
	if err != nil {
		return nil, err
	}
	key := func(l Listed) int64 {
		switch opts.Sort {
		case SortStart:
			return int64(l.StartSeq) //nolint:gosec // stream sequences fit in int64
		case SortUpdate:
			return l.Updated.UnixNano()
		}
		return 0
	}
	// Newest first, ties (and SortID) by run id.
	order := func(ka int64, ra string, kb int64, rb string) int {
		if ka != kb {
			return cmp.Compare(kb, ka)
		}
		return cmp.Compare(ra, rb)
	}
	slices.SortStableFunc(runs, func(a, b Listed) int { return order(key(a), a.Status.Run, key(b), b.Status.Run) })
	if after != nil {
		i, _ := slices.BinarySearchFunc(runs, after, func(l Listed, c *cursor) int {
			if order(key(l), l.Status.Run, c.Key, c.Run) <= 0 {
				return -1
			}
			return 1
		})
		runs = runs[i:]
	}
	page := &RunPage{Runs: runs, Skipped: skipped, Scanned: true}
	if opts.Limit > 0 && len(runs) > opts.Limit {
		page.Runs = runs[:opts.Limit]
		last := page.Runs[len(page.Runs)-1]
		page.Next = encodeCursor(cursor{Sort: opts.Sort, Key: key(last), Run: last.Status.Run})
	}
	return page, nil
}

func encodeCursor(c cursor) string {
	data, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeCursor(s, sort string) (*cursor, error) {
	data, err := base64.RawURLEncoding.DecodeString(s)
	var c cursor
	if err == nil {
		err = json.Unmarshal(data, &c)
	}
	if err != nil || c.Run == "" {
		return nil, fmt.Errorf("%w: cursor %q is not one a listing printed", ErrBadFilter, s)
	}
	if c.Sort != sort {
		return nil, fmt.Errorf("%w: cursor %q is for sort %q, not %q: page with the sort it came from", ErrBadFilter, s, c.Sort, sort)
	}
	return &c, nil
}
