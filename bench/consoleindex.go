package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/console"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/provision"
)

// The console-index scenario fills the run bucket of a deployment of its
// own (consolePrefix, on the setup's servers) with run records, has a
// fresh console index them from scratch, and asks its run list for a few
// filtered pages and for every page, newest first, following the cursors.
// It checks that every run is indexed and every page answers, and times
// each step.
const (
	consolePrefix = "bench-console"
	// consoleTries is how often each filtered page is asked.
	consoleTries = 20
	// consoleBatch is how many records are stored at once.
	consoleBatch = 1000
)

// ConsoleReport is the console-index scenario's figures.
type ConsoleReport struct {
	Runs int `json:"runs"`
	// RecordBytes is the size of each stored record (a real one is about
	// as big).
	RecordBytes int `json:"record_bytes"`
	// StoreSeconds is how long storing the records took, IndexSeconds
	// how long a fresh console took from Start to an index of all of them.
	StoreSeconds  float64 `json:"store_seconds"`
	IndexSeconds  float64 `json:"index_seconds"`
	IndexedPerSec float64 `json:"indexed_per_sec"`
	// Indexed is the index's total once loaded.
	Indexed int `json:"indexed"`
	// Queries are the filtered pages, each asked consoleTries times.
	Queries []ConsoleQuery `json:"queries"`
	// WalkPages pages of the default size held WalkRuns distinct runs;
	// Walk is the time of each page, WalkSeconds of them all.
	WalkPages   int     `json:"walk_pages"`
	WalkRuns    int     `json:"walk_runs"`
	WalkSeconds float64 `json:"walk_seconds"`
	Walk        Latency `json:"walk"`
	// Failures lists every page that did not answer as it should.
	Failures []string `json:"failures,omitempty"`
}

// ConsoleQuery is one filtered page of the run list.
type ConsoleQuery struct {
	Query   string  `json:"query"`
	Matched int     `json:"matched"`
	Latency Latency `json:"latency"`
}

// Complete reports whether every run was indexed and every page answered.
func (c *ConsoleReport) Complete() bool {
	return c.Indexed == c.Runs && c.WalkRuns == c.Runs && len(c.Failures) == 0 && len(c.Queries) > 0
}

// consoleStatuses cycle over the stored runs.
var consoleStatuses = []string{"running", "waiting", "done", "failed", "cancelled"}

// consoleRunID is the id of stored run i.
func consoleRunID(i int) string { return fmt.Sprintf("ci-%07d", i) }

// consoleRecord is stored run i: the fields the console reads, shaped as
// the dispatcher writes them, padded to the size of a real record.
func consoleRecord(i int) []byte {
	st := consoleStatuses[i%len(consoleStatuses)]
	id := consoleRunID(i)
	return fmt.Appendf(nil, `{"state":{"workflow":"wf-%d","revision":"r%d","runId":%q,"status":%q,"control":{"active":["/states/s%d"],"time":%d},"context":{"input":{"n":%d,"note":%q}}},"status":{"run":%q,"workflow":"wf-%d","revision":"r%d","status":%q,"time":%d}}`,
		i%3, i%2, id, st, i%4, 1_000_000+i, i, strings.Repeat("x", 640), id, i%3, i%2, st, 2_000_000+i)
}

// consoleIndex measures the scenario.
func (r *runner) consoleIndex(ctx context.Context) (rep ScenarioReport, err error) {
	n := r.cfg.ConsoleRuns
	cr := &ConsoleReport{Runs: n, RecordBytes: len(consoleRecord(n - 1))}
	rep = ScenarioReport{Scenario: ConsoleIndex, Runs: n, Console: cr}
	f, err := fleet.Start(ctx, fleet.Config{
		URL: r.dep.url, Prefix: consolePrefix, Logger: r.cfg.Logger,
		NATSOptions: []nats.Option{nats.Name("jetflow-bench-console")},
		Provision:   provision.ProvisionOptions{Replicas: r.dep.replicas, Storage: jetstream.FileStorage},
	})
	if err != nil {
		return rep, fmt.Errorf("bench: console-index: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		// The records go with the deployment: the next scenarios' stores
		// do not carry them.
		err = errors.Join(err, deleteStreams(sctx, f.JS, consolePrefix+"_"), f.Stop(sctx))
	}()

	r.progress("%s: storing %d run records of %d bytes", ConsoleIndex, n, cr.RecordBytes)
	began := time.Now()
	if err := storeRecords(ctx, f.JS, f.Names.KVKeyPrefix(f.Names.RunBucket()), n); err != nil {
		return rep, fmt.Errorf("bench: console-index: %w", err)
	}
	cr.StoreSeconds = time.Since(began).Seconds()

	c, err := console.New(consoleOf(f, console.Config{Logger: r.cfg.Logger}))
	if err != nil {
		return rep, fmt.Errorf("bench: console-index: %w", err)
	}
	began = time.Now()
	if err := c.Start(ctx); err != nil {
		return rep, fmt.Errorf("bench: console-index: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err = errors.Join(err, c.Stop(sctx))
	}()
	patience := r.cfg.RunTimeout + time.Duration(n)*100*time.Microsecond
	for !c.Loaded() {
		if time.Since(began) > patience {
			return rep, fmt.Errorf("bench: console-index: the index of %d runs is not loaded after %s", n, patience)
		}
		select {
		case <-ctx.Done():
			return rep, context.Cause(ctx)
		case <-time.After(2 * time.Millisecond):
		}
	}
	cr.IndexSeconds = time.Since(began).Seconds()
	cr.IndexedPerSec = float64(n) / cr.IndexSeconds
	rep.RunsPerSec = cr.IndexedPerSec
	mux := http.NewServeMux()
	c.Mount(mux)
	get := func(query string) (console.Page, time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "/console/api/runs"+query, nil)
		if err != nil {
			return console.Page{}, 0, err
		}
		var w responseBuffer
		t0 := time.Now()
		mux.ServeHTTP(&w, req)
		took := time.Since(t0)
		var p console.Page
		if w.code != 0 && w.code != http.StatusOK {
			return p, took, fmt.Errorf("status %d: %s", w.code, bytes.TrimSpace(w.body.Bytes()))
		}
		if err := json.Unmarshal(w.body.Bytes(), &p); err != nil {
			return p, took, fmt.Errorf("body: %w", err)
		}
		return p, took, nil
	}
	fail := func(format string, args ...any) { cr.Failures = append(cr.Failures, fmt.Sprintf(format, args...)) }
	first, _, err := get("")
	if err != nil {
		return rep, fmt.Errorf("bench: console-index: the first page: %w", err)
	}
	cr.Indexed = first.Total
	if !first.Loaded || first.Total != n {
		fail("the first page counts %d runs (loaded %v), want %d", first.Total, first.Loaded, n)
	}

	r.progress("%s: %d runs indexed in %.2f s; asking the run list", ConsoleIndex, n, cr.IndexSeconds)
	for _, q := range consoleQueries(n) {
		var took []time.Duration
		var page console.Page
		for range consoleTries {
			p, d, err := get(q.query)
			if err != nil {
				fail("%s: %v", q.query, err)
				break
			}
			page, took = p, append(took, d)
		}
		cr.Queries = append(cr.Queries, ConsoleQuery{Query: q.query, Matched: page.Matched, Latency: latencyOf(took)})
		if len(took) < consoleTries {
			continue
		}
		if page.Matched != q.matched {
			fail("%s: matched %d, want %d", q.query, page.Matched, q.matched)
		}
		for _, s := range page.Runs {
			if !q.keep(s) {
				fail("%s: run %s (%s, %s, rev %d) does not pass the filter", q.query, s.ID, s.Workflow, s.Status, s.Rev)
				break
			}
		}
		if want := min(q.below, 50); len(page.Runs) != want {
			fail("%s: %d runs on the page, want %d", q.query, len(page.Runs), want)
		}
	}

	// Every page, newest first.
	seen := make(map[string]bool, n)
	var took []time.Duration
	began = time.Now()
	prev := uint64(math.MaxUint64)
	for query := ""; ; {
		p, d, err := get(query)
		if err != nil {
			fail("page %d (%s): %v", len(took)+1, query, err)
			break
		}
		took = append(took, d)
		for _, s := range p.Runs {
			if seen[s.ID] || s.Rev >= prev {
				fail("page %d: run %s (rev %d) again or out of order", len(took), s.ID, s.Rev)
			}
			seen[s.ID], prev = true, s.Rev
		}
		if p.Next == 0 || len(p.Runs) == 0 {
			break
		}
		query = "?before=" + strconv.FormatUint(p.Next, 10)
	}
	cr.WalkSeconds = time.Since(began).Seconds()
	cr.WalkPages, cr.WalkRuns, cr.Walk = len(took), len(seen), latencyOf(took)
	if cr.WalkRuns != n {
		fail("the pages held %d distinct runs, want %d", cr.WalkRuns, n)
	}
	rep.Saturated = cr.Walk
	r.progress("%s: %d pages in %.2f s (p50 %.2f ms a page)%s", ConsoleIndex, cr.WalkPages, cr.WalkSeconds, cr.Walk.P50, failures(cr.Failures))
	return rep, nil
}

func failures(fs []string) string {
	if len(fs) == 0 {
		return ""
	}
	return fmt.Sprintf("; %d failures, the first: %s", len(fs), fs[0])
}

// consoleQuery is a filtered page and what it must hold.
type consoleQuery struct {
	query string
	// matched is how many runs pass the filter, below how many of them lie
	// under the cursor; keep is the filter.
	matched, below int
	keep           func(console.Summary) bool
}

// consoleQueries are the filtered pages asked of n stored runs: the
// first page, by status, by workflow and status, by a search that
// matches few, and from a cursor halfway down.
func consoleQueries(n int) []consoleQuery {
	half := uint64(n/2) + 1 // run i is at revision i+1
	search := consoleRunID(n / 2)[:len(consoleRunID(0))-2]
	qs := []consoleQuery{
		{query: "", keep: func(console.Summary) bool { return true }},
		{query: "?status=waiting", keep: func(s console.Summary) bool { return s.Status == "waiting" }},
		{query: "?workflow=wf-2&status=failed", keep: func(s console.Summary) bool { return s.Workflow == "wf-2" && s.Status == "failed" }},
		{query: "?q=" + search, keep: func(s console.Summary) bool { return strings.Contains(s.ID, search) }},
		{query: "?before=" + strconv.FormatUint(half, 10), keep: func(s console.Summary) bool { return s.Rev < half }},
	}
	for i := range qs {
		q := &qs[i]
		for j := range n {
			st := consoleStatuses[j%len(consoleStatuses)]
			s := console.Summary{ID: consoleRunID(j), Workflow: "wf-" + strconv.Itoa(j%3), Status: st, Rev: uint64(j + 1)}
			if strings.HasPrefix(q.query, "?before=") {
				// A cursor narrows the page, not the count.
				q.matched++
				if q.keep(s) {
					q.below++
				}
				continue
			}
			if q.keep(s) {
				q.matched++
				q.below++
			}
		}
	}
	return qs
}

// storeRecords writes n run records as KV puts on subject prefix + id,
// consoleBatch at a time.
func storeRecords(ctx context.Context, js jetstream.JetStream, prefix string, n int) error {
	for i := 0; i < n; i += consoleBatch {
		acks := make([]jetstream.PubAckFuture, 0, consoleBatch)
		for j := i; j < min(i+consoleBatch, n); j++ {
			a, err := js.PublishAsync(prefix+consoleRunID(j), consoleRecord(j))
			if err != nil {
				return err
			}
			acks = append(acks, a)
		}
		for _, a := range acks {
			select {
			case <-a.Ok():
			case err := <-a.Err():
				return err
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
	}
	return nil
}

// deleteStreams deletes every stream (buckets included) whose name holds
// part.
func deleteStreams(ctx context.Context, js jetstream.JetStream, part string) error {
	names := js.StreamNames(ctx)
	var doomed []string
	for name := range names.Name() {
		if strings.Contains(name, part) {
			doomed = append(doomed, name)
		}
	}
	errs := []error{names.Err()}
	slices.Sort(doomed)
	for _, name := range doomed {
		errs = append(errs, js.DeleteStream(ctx, name))
	}
	return errors.Join(errs...)
}

// responseBuffer is an http.ResponseWriter that keeps the response.
type responseBuffer struct {
	h    http.Header
	code int
	body bytes.Buffer
}

func (w *responseBuffer) Header() http.Header {
	if w.h == nil {
		w.h = http.Header{}
	}
	return w.h
}

func (w *responseBuffer) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *responseBuffer) Write(p []byte) (int, error) { return w.body.Write(p) }

// consoleOf fills the connection fields of cfg from a running fleet.
func consoleOf(f *fleet.Fleet, cfg console.Config) console.Config {
	cfg.JS, cfg.Names, cfg.Runs, cfg.Registry, cfg.Client = f.JS, f.Names, f.Runs, f.Registry, f.Client
	return cfg
}
