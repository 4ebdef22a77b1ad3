package console

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
)

// The run list is served from an index kept in memory: one scan of the
// run bucket when the console starts (a KV watch delivers every current
// record), then every change as the watch reports it. The summaries sit
// in a log ordered by bucket revision, so a page walks back from its
// cursor and stops when it is full: the first page of 100,000 runs reads
// 51 summaries, a filtered page as many as it passes over. Counts per
// status and workflow are kept as changes arrive; only a search by run
// id counts its matches with a pass over the summaries. The price is
// memory (a few hundred bytes per run) and the start-up scan (seconds per
// 100,000 runs; the list says how far it got meanwhile).

// Summary is one run as the list shows it.
type Summary struct {
	ID       string `json:"id"`
	Workflow string `json:"workflow"`
	Revision string `json:"revision"`
	Status   string `json:"status"`
	// State is the active leaf state's id.
	State string `json:"state,omitempty"`
	// Updated is when the record last changed (Unix ms, server time).
	Updated int64 `json:"updated"`
	// Started is when the run's start message was stored (Unix ms), 0
	// when not known yet; Settled the logical time it ended, 0 while it
	// runs.
	Started int64          `json:"started,omitempty"`
	Settled int64          `json:"settled,omitempty"`
	Error   *wire.RunError `json:"error,omitempty"`
	// Caught is the code of the failure a done run's catch recovered
	// from, when the run's data is still that error (run.CaughtIn).
	Caught string `json:"caught,omitempty"`
	// Rev is the record's revision in the run bucket: the list's order
	// (most recently changed first) and its paging cursor.
	Rev uint64 `json:"rev"`

	slot int // position in index.log
}

// active reports whether the run can still change.
func (s *Summary) active() bool { return !run.Status(s.Status).Terminal() }

// lightRecord is the part of a runrecord.Record a summary needs; the
// rest of the record is skipped while decoding.
type lightRecord struct {
	State struct {
		Workflow string       `json:"workflow"`
		Revision string       `json:"revision"`
		Status   string       `json:"status"`
		Error    *run.Failure `json:"error"`
		Control  struct {
			Active []string `json:"active"`
			Time   float64  `json:"time"`
		} `json:"control"`
		Context struct {
			Data caughtData `json:"data"`
		} `json:"context"`
	} `json:"state"`
	Status *wire.Status `json:"status"`
}

// caughtData decodes a run's data only as far as a caught failure:
// other data (most runs') is skipped without building it.
type caughtData struct{ caught *run.Caught }

func (d *caughtData) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '{' || !bytes.Contains(b, []byte(`"error"`)) {
		return nil
	}
	var v any
	if json.Unmarshal(b, &v) == nil {
		d.caught = run.CaughtIn(v)
	}
	return nil
}

// summarize reads a record into a summary; ok is false for a value that
// is not a run record.
func summarize(id string, data []byte, rev uint64, updated time.Time) (*Summary, bool) {
	var r lightRecord
	if err := json.Unmarshal(data, &r); err != nil || r.State.Status == "" {
		return nil, false
	}
	s := &Summary{
		ID: id, Workflow: r.State.Workflow, Revision: r.State.Revision, Status: r.State.Status,
		Updated: updated.UnixMilli(), Rev: rev,
	}
	if len(r.State.Control.Active) > 0 {
		s.State = r.State.Control.Active[0]
	}
	s.Error = step.RunError(r.State.Error)
	if c := r.State.Context.Data.caught; c != nil && s.Status == string(run.StatusDone) {
		s.Caught = c.Code
	}
	if !s.active() {
		s.Settled = int64(r.State.Control.Time)
		if r.Status != nil && r.Status.Status == s.Status && r.Status.Time > 0 {
			s.Settled = int64(r.Status.Time)
		}
	}
	return s, true
}

// changeLog bounds how many recent changes the index remembers for event
// streams that fell behind; older ones get a reset instead.
const changeLog = 8192

type change struct {
	version uint64
	id      string
}

// index holds the summaries of every run in the bucket.
type index struct {
	mu   sync.RWMutex
	runs map[string]*Summary
	// log holds every summary in Rev order; a replaced or deleted one
	// leaves nil behind until the log is compacted.
	log      []*Summary
	maxRev   uint64
	byStatus map[string]int
	// byWorkflow counts runs by workflow and by workflow and status.
	byWorkflow map[[2]string]int
	// active counts running and waiting runs by workflow and revision.
	active  map[[2]string]int
	loaded  bool
	version uint64
	changes []change // ring of the last changeLog changes
	next    int
	changed chan struct{}
}

func newIndex() *index {
	return &index{
		runs: map[string]*Summary{}, byStatus: map[string]int{}, byWorkflow: map[[2]string]int{},
		active: map[[2]string]int{}, changed: make(chan struct{}),
	}
}

// apply records one watch entry (nil marks the end of the initial values).
func (x *index) apply(e jetstream.KeyValueEntry) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e == nil {
		x.loaded = true
		x.bump("")
		return
	}
	id := e.Key()
	var started int64
	if old := x.runs[id]; old != nil {
		started = old.Started
		x.count(old, -1)
		x.log[old.slot] = nil
		delete(x.runs, id)
	}
	if e.Operation() == jetstream.KeyValuePut {
		if s, ok := summarize(id, e.Value(), e.Revision(), e.Created()); ok {
			s.Started = started
			x.runs[id] = s
			x.count(s, 1)
			x.insert(s)
		}
	}
	if len(x.log) > 2*len(x.runs)+1024 {
		x.compact()
	}
	if x.loaded {
		x.bump(id)
	}
}

// insert adds s to the log. Revisions only grow, so it is nearly always
// an append; a revision older than the last (a watch that restarted) is
// put in its place.
func (x *index) insert(s *Summary) {
	if s.Rev > x.maxRev {
		x.maxRev, s.slot = s.Rev, len(x.log)
		x.log = append(x.log, s)
		return
	}
	i := len(x.log)
	for i > 0 && (x.log[i-1] == nil || x.log[i-1].Rev > s.Rev) {
		i--
	}
	for i < len(x.log) && x.log[i] == nil {
		i++
	}
	if i == len(x.log) {
		s.slot = i
		x.log = append(x.log, s)
		return
	}
	x.log = append(x.log, nil)
	copy(x.log[i+1:], x.log[i:])
	x.log[i] = s
	for j := i; j < len(x.log); j++ {
		if x.log[j] != nil {
			x.log[j].slot = j
		}
	}
}

// compact drops the log's holes.
func (x *index) compact() {
	live := make([]*Summary, 0, len(x.runs))
	for _, s := range x.log {
		if s != nil {
			s.slot = len(live)
			live = append(live, s)
		}
	}
	x.log = live
}

func (x *index) count(s *Summary, d int) {
	x.byStatus[s.Status] += d
	for _, k := range [][2]string{{s.Workflow, ""}, {s.Workflow, s.Status}} {
		if x.byWorkflow[k] += d; x.byWorkflow[k] == 0 {
			delete(x.byWorkflow, k)
		}
	}
	if s.active() {
		k := [2]string{s.Workflow, s.Revision}
		if x.active[k] += d; x.active[k] == 0 {
			delete(x.active, k)
		}
	}
}

// bump announces a change; the caller holds mu.
func (x *index) bump(id string) {
	x.version++
	if id != "" {
		c := change{x.version, id}
		if len(x.changes) < changeLog {
			x.changes = append(x.changes, c)
		} else {
			x.changes[x.next] = c
			x.next = (x.next + 1) % changeLog
		}
	}
	close(x.changed)
	x.changed = make(chan struct{})
}

// watch returns the current version and a channel closed at the next
// change.
func (x *index) watch() (uint64, <-chan struct{}) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.version, x.changed
}

// since returns the runs changed after version v (each once, latest
// summary; nil for a run since removed) and whether the log still
// reached back that far.
func (x *index) since(v uint64) (now uint64, ids []string, complete bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	seen := map[string]bool{}
	complete = true
	oldest := x.version + 1
	for _, c := range x.changes {
		oldest = min(oldest, c.version)
		if c.version > v && !seen[c.id] {
			seen[c.id] = true
			ids = append(ids, c.id)
		}
	}
	if len(x.changes) == changeLog && oldest > v+1 {
		complete = false
	}
	return x.version, ids, complete
}

// get returns a copy of one run's summary.
func (x *index) get(id string) (Summary, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	s := x.runs[id]
	if s == nil {
		return Summary{}, false
	}
	return *s, true
}

// setStarted records a start time learnt from the input stream.
func (x *index) setStarted(id string, ms int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if s := x.runs[id]; s != nil {
		s.Started = ms
	}
}

// Query selects runs for a page.
type Query struct {
	Status   string
	Workflow string
	// Search keeps runs whose id contains it (case-sensitive, as ids are).
	Search string
	// Where are search attribute conditions (the box's NAME=VALUE words):
	// the run index answers them (whereRuns), not this one.
	Where map[string]string
	// Cursor continues a Where page (the run index's cursor).
	Cursor string
	// Before is a cursor: only runs whose Rev is below it (0: from the
	// most recent).
	Before uint64
	Limit  int
}

// Page is one page of runs, most recently changed first.
type Page struct {
	Runs []Summary `json:"runs"`
	// Next is the cursor of the following page, 0 when there is none.
	Next uint64 `json:"next,omitempty"`
	// Cursor is the following page's cursor of a Where page (the run
	// index's), empty when there is none; such a page counts no matches
	// (Matched is -1).
	Cursor string `json:"cursor,omitempty"`
	// Matched counts every run the filter keeps.
	Matched int  `json:"matched"`
	Total   int  `json:"total"`
	Loaded  bool `json:"loaded"`
}

// query walks the log back from the cursor, keeping runs that pass the
// filter until the page is full (and one more, which says there is a
// next page).
func (x *index) query(q Query) Page {
	x.mu.RLock()
	defer x.mu.RUnlock()
	p := Page{Total: len(x.runs), Loaded: x.loaded, Runs: []Summary{}}
	keep := func(s *Summary) bool {
		return (q.Status == "" || s.Status == q.Status) && (q.Workflow == "" || s.Workflow == q.Workflow) &&
			(q.Search == "" || strings.Contains(s.ID, q.Search))
	}
	switch {
	case q.Search != "":
		for _, s := range x.log {
			if s != nil && keep(s) {
				p.Matched++
			}
		}
	case q.Workflow != "":
		p.Matched = x.byWorkflow[[2]string{q.Workflow, q.Status}]
	case q.Status != "":
		p.Matched = x.byStatus[q.Status]
	default:
		p.Matched = len(x.runs)
	}
	i := len(x.log)
	if q.Before != 0 {
		i = sort.Search(len(x.log), func(j int) bool { return x.logRev(j) >= q.Before })
	}
	for i--; i >= 0; i-- {
		s := x.log[i]
		if s == nil || !keep(s) {
			continue
		}
		if len(p.Runs) == q.Limit {
			p.Next = p.Runs[len(p.Runs)-1].Rev
			break
		}
		p.Runs = append(p.Runs, *s)
	}
	return p
}

// logRev is the revision at log position j, or of the next live entry
// before it (holes keep the log searchable).
func (x *index) logRev(j int) uint64 {
	for ; j >= 0; j-- {
		if x.log[j] != nil {
			return x.log[j].Rev
		}
	}
	return 0
}

// Counts are the index's totals.
type Counts struct {
	Total    int            `json:"total"`
	Loaded   bool           `json:"loaded"`
	ByStatus map[string]int `json:"byStatus"`
}

func (x *index) counts() Counts {
	x.mu.RLock()
	defer x.mu.RUnlock()
	c := Counts{Total: len(x.runs), Loaded: x.loaded, ByStatus: map[string]int{}}
	for k, v := range x.byStatus {
		if v > 0 {
			c.ByStatus[k] = v
		}
	}
	return c
}

// activeRuns counts the running and waiting runs of each revision of
// workflow.
func (x *index) activeRuns(workflow string) map[string]int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := map[string]int{}
	for k, v := range x.active {
		if k[0] == workflow {
			out[k[1]] = v
		}
	}
	return out
}
