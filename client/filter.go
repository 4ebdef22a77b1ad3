package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// RunStatuses are the statuses a filter may name.
var RunStatuses = []string{wire.StatusRunning, wire.StatusWaiting, wire.StatusDone, wire.StatusFailed, wire.StatusCancelled, wire.StatusPaused, wire.StatusTerminated}

// ErrBadFilter is wrapped by every refusal of a filter.
var ErrBadFilter = errors.New("bad run filter")

// ErrMatch is wrapped when a filter's query fails on a run (its error
// keeps the JQ code and JSON Pointer).
var ErrMatch = errors.New("match query failed")

// Matcher is a compiled wire.RunFilter. Build it with CompileFilter, bind
// its start-time bounds to the input stream with Bind, then call Match
// for each run.
type Matcher struct {
	f             wire.RunFilter
	q             *query.Query
	before, after time.Time
	// beforeSeq and afterSeq are the start-time bounds as input stream
	// sequences (Bind): a run started before T has a start sequence below
	// the first message stored at or after T.
	beforeSeq, afterSeq uint64
	bound               bool
	// runs is f.Runs as a set (nil: every run id passes).
	runs map[string]bool
}

// CompileFilter checks every field of f and compiles its query; each
// refusal wraps ErrBadFilter and names the field (a query error keeps
// its JQ code and JSON Pointer).
func CompileFilter(f wire.RunFilter) (*Matcher, error) {
	m := &Matcher{f: f}
	bad := func(field string, err error) (*Matcher, error) {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadFilter, field, err)
	}
	if f.Workflow != "" {
		if err := subjects.CheckWorkflowName(f.Workflow); err != nil {
			return bad("workflow", err)
		}
	}
	if f.Status != "" && !slices.Contains(RunStatuses, f.Status) {
		return nil, fmt.Errorf("%w: status %q is not a run status (one of %s)", ErrBadFilter, f.Status, strings.Join(RunStatuses, ", "))
	}
	var err error
	if m.before, err = parseTime(f.StartedBefore); err != nil {
		return bad("started-before", err)
	}
	if m.after, err = parseTime(f.StartedAfter); err != nil {
		return bad("started-after", err)
	}
	for _, name := range whereNames(f.Where) {
		if err := subjects.CheckSearchName(name); err != nil {
			return nil, fmt.Errorf("%w: where %s=%s: %w", ErrBadFilter, name, f.Where[name], err)
		}
	}
	if len(f.Runs) > wire.MaxFilterRuns {
		return nil, fmt.Errorf("%w: run: %d run ids, more than the %d a filter may name (name fewer, or select the runs by the other fields)", ErrBadFilter, len(f.Runs), wire.MaxFilterRuns)
	}
	if len(f.Runs) > 0 {
		m.runs = make(map[string]bool, len(f.Runs))
		for _, id := range f.Runs {
			if err := subjects.CheckRunID(id); err != nil {
				return bad("run", err)
			}
			m.runs[id] = true
		}
	}
	if len(f.Match) > 0 {
		doc, err := value.Decode(f.Match, value.Limits{})
		if err != nil {
			return bad("match", fmt.Errorf("not JSON: %w", err))
		}
		if m.q, err = query.Compile(doc, query.Options{}); err != nil {
			return bad("match", err)
		}
	}
	return m, nil
}

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time (such as 2026-12-01T10:00:00Z)", s)
	}
	return t, nil
}

// Filter is the filter the matcher was compiled from.
func (m *Matcher) Filter() wire.RunFilter { return m.f }

// Bind maps the start-time bounds to input stream sequences, a few reads
// of the input stream (a binary search over it). A filter without
// start-time bounds needs no Bind. A run's start time is when the input
// stream stored its start; a run whose record names no start sequence
// (one written before records kept their order) counts as started before
// any bound.
func (m *Matcher) Bind(ctx context.Context, js jetstream.JetStream, names subjects.Names) error {
	if m.before.IsZero() && m.after.IsZero() {
		m.bound = true
		return nil
	}
	s, err := kvstore.BindLeader(ctx, js, names.InputStream())
	if err != nil {
		return fmt.Errorf("client: filter: bind input stream %q: %w", names.InputStream(), err)
	}
	st := s.CachedInfo().State
	for _, b := range []struct {
		t   time.Time
		seq *uint64
	}{{m.before, &m.beforeSeq}, {m.after, &m.afterSeq}} {
		if b.t.IsZero() {
			continue
		}
		if *b.seq, err = firstSeqAt(ctx, js, names, st.FirstSeq, st.LastSeq, b.t); err != nil {
			return fmt.Errorf("client: filter: find the input stream's first message at %s: %w", b.t.Format(time.RFC3339Nano), err)
		}
	}
	m.bound = true
	return nil
}

// firstSeqAt is the sequence of the first input stored at or after t
// (last+1 when none): stream times grow with sequences.
func firstSeqAt(ctx context.Context, js jetstream.JetStream, names subjects.Names, first, last uint64, t time.Time) (uint64, error) {
	lo, hi := max(first, 1), last+1
	for lo < hi {
		mid := lo + (hi-lo)/2
		msg, err := kvstore.NextOnSubject(ctx, js, names.InputStream(), mid, names.InputAll())
		switch {
		case errors.Is(err, kvstore.ErrNoKey):
			hi = mid
		case err != nil:
			return 0, err
		case !msg.Time.Before(t):
			hi = mid
		default:
			lo = msg.Sequence + 1
		}
	}
	return lo, nil
}

// Run is what a filter looked at in one run record.
type Run struct {
	ID     string
	Status *wire.Status
	State  *run.State
	// StartSeq is the input stream sequence of the run's start (0 when
	// the record does not say).
	StartSeq uint64
	// Search is the run's search attributes: set by a caller that answers
	// a filter's Where (Client.Matching), nil otherwise.
	Search map[string]string
}

// Decode reads what a filter and a listing need from a run record.
func Decode(runID string, data []byte) (*Run, error) {
	rec, err := runrecord.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	st, err := step.DecodeState(rec)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	ws, err := step.StatusOf(runID, rec, st)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	return &Run{ID: runID, Status: ws, State: st, StartSeq: rec.Order.First()}, nil
}

// Match reports whether the run passes the filter. Its error is the
// --match query's evaluation error (JQ code and pointer), naming the run.
func (m *Matcher) Match(r *Run) (bool, error) {
	f := m.f
	if (!m.before.IsZero() || !m.after.IsZero()) && !m.bound {
		return false, errors.New("client: filter: call Bind before Match: the filter has start-time bounds")
	}
	switch {
	case !m.named(r.ID),
		f.Workflow != "" && r.Status.Workflow != f.Workflow,
		f.Revision != "" && r.Status.Revision != f.Revision,
		f.Status != "" && r.Status.Status != f.Status,
		f.State != "" && !inState(r.State.Control.Active, f.State),
		!m.before.IsZero() && r.StartSeq >= m.beforeSeq,
		!m.after.IsZero() && (r.StartSeq == 0 || r.StartSeq < m.afterSeq):
		return false, nil
	}
	for name, v := range f.Where {
		if got, ok := r.Search[name]; !ok || got != v {
			return false, nil
		}
	}
	if m.q == nil {
		return true, nil
	}
	ok, err := m.q.EBV(map[string]any{"input": r.State.Context.Input, "data": r.State.Context.Data}, nil)
	if err != nil {
		return false, fmt.Errorf("run %s: %w: %w", r.ID, ErrMatch, err)
	}
	return ok, nil
}

// named reports whether the filter's run ids admit run id (any id does
// when the filter names none).
func (m *Matcher) named(id string) bool { return m.runs == nil || m.runs[id] }

// inState: a state given as its id ("/states/a/flow/states/b") or as
// the CLI shows it ("a/b").
func inState(active []string, s string) bool {
	for _, id := range active {
		if id == s || strings.ReplaceAll(strings.TrimPrefix(id, "/states/"), "/flow/states/", "/") == s {
			return true
		}
	}
	return false
}
