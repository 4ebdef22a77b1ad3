package runindex_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/runindex"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// indexScale is the number of runs TestListAtScale stores; 0 skips it.
// The figures of docs/PERFORMANCE.md come from
//
//	go test ./runindex/ -run TestListAtScale -index-scale 1000000 -v -timeout 60m
var (
	indexScale = flag.Int("index-scale", 0, "runs TestListAtScale stores and indexes (0 skips it)")
	indexDir   = flag.String("index-dir", "", "TestListAtScale's store; one that holds the runs already is only queried")
	indexRows  = flag.String("index-rows", "", "a regular expression: TestListAtScale times only the listings it matches (default all)")
	indexTries = flag.Int("index-tries", 101, "how many times TestListAtScale asks each listing (the first is reported apart: it reads cold blocks)")
	// indexBackfill measures the indexer's backfill; without it the
	// entries are written straight from the records (Build, Head and
	// Subjects, as the indexer makes them), minutes instead of half an
	// hour at 1,000,000 runs.
	indexBackfill = flag.Bool("index-backfill", false, "TestListAtScale indexes the runs with an indexer (its backfill) instead of writing the entries straight")
)

// Shapes of the stored runs: run i is of workflow wf-(i%5), in status
// scaleStatuses[i%5] (so each workflow has one status), with customer
// c-(i%10000).
var scaleStatuses = []string{wire.StatusWaiting, wire.StatusDone, wire.StatusFailed, wire.StatusRunning, wire.StatusCancelled}

const scaleCustomers = 10000

// scaleRecord is run i's record, shaped as the dispatcher writes it for
// a run of a one-state workflow.
func scaleRecord(i int) []byte { return runRecord(i, fmt.Sprintf("c-%d", i%scaleCustomers)) }

// runRecord is run i's record as scaleRecord shapes it, for customer cust.
func runRecord(i int, cust string) []byte {
	id, st := fmt.Sprintf("s-%07d", i), scaleStatuses[(i/5)%len(scaleStatuses)]
	wf := fmt.Sprintf("wf-%d", i%5)
	return fmt.Appendf(nil, `{"state":{"workflow":%q,"revision":"r1","runId":%q,"status":%q,"generation":3,"context":{"input":{"customer":%q,"qty":%d},"data":{"customer":%q},"event":null,"results":{},"visits":{"/states/gate":1}},"pending":null,"seq":1,"control":{"active":["/states/gate"],"history":{},"timers":[],"serial":0,"time":%d}},"status":{"run":%q,"workflow":%q,"revision":"r1","status":%q,"state":"/states/gate","time":%d},"applied":[%d],"order":[[%d,%d]]}`,
		wf, id, st, cust, i%7, cust, 1796183856843+i, id, wf, st, 1796183856843+i, i+1, i+1, i+1)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestListAtScale stores -index-scale run records, indexes them from
// scratch and times filtered pages of ListRuns: each listing's first try
// (cold: it loads blocks no earlier row did) apart, then p50 and p99 of
// the -index-tries after it. It checks what every page holds; the times
// are printed.
func TestListAtScale(t *testing.T) {
	n := *indexScale
	if n == 0 {
		t.Skip("give -index-scale N to run it")
	}
	var opts []natstest.Option
	if *indexDir != "" {
		opts = append(opts, natstest.WithConfig(func(c *embedded.Config) { c.DataDir = *indexDir }))
	}
	srv := natstest.Server(t, opts...)
	nc := natstest.Conn(t, srv)
	js := natstest.JetStream(t, nc)
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Minute)
	defer cancel()
	names := subjects.Must("")
	if err := provision.Provision(ctx, js, names, provision.ProvisionOptions{Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	runs, err := js.Stream(ctx, names.KVStream(names.RunBucket()))
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if runs.CachedInfo().State.Msgs >= uint64(n) { //nolint:gosec // a count
		t.Logf("the store holds the runs already; indexing what is left")
	} else {
		storeAtScale(ctx, t, js, names, n)
		t.Logf("stored %d records of about %d bytes in %s", n, len(scaleRecord(n-1)), time.Since(began).Round(time.Millisecond))
	}
	fillInputs(ctx, t, js, names, n)
	if *indexBackfill {
		indexAtScale(ctx, t, js, names, n)
	} else {
		writeIndexAtScale(ctx, t, js, names, n)
	}
	queryAtScale(ctx, t, js)
}

// storeAtScale writes runs 0…n-1 to the run bucket.
func storeAtScale(ctx context.Context, t *testing.T, js jetstream.JetStream, names subjects.Names, n int) {
	t.Helper()
	storeRuns(ctx, t, js, names, n, scaleRecord)
}

// storeRuns writes runs 0…n-1 to the run bucket, run i's record rec(i).
func storeRuns(ctx context.Context, t *testing.T, js jetstream.JetStream, names subjects.Names, n int, rec func(int) []byte) {
	t.Helper()
	prefix := names.KVKeyPrefix(names.RunBucket())
	acks := make([]jetstream.PubAckFuture, 0, 1000)
	flush := func() {
		for _, a := range acks {
			select {
			case <-a.Ok():
			case err := <-a.Err():
				t.Fatal(err)
			}
		}
		acks = acks[:0]
	}
	for i := range n {
		a, err := js.PublishAsync(prefix+fmt.Sprintf("s-%07d", i), rec(i))
		if err != nil {
			t.Fatal(err)
		}
		if acks = append(acks, a); len(acks) == cap(acks) {
			flush()
		}
	}
	flush()
}

// fillInputs publishes to the input stream until its last sequence is
// at least n: run i's record says it started at input sequence i+1, and
// a listing by start reads no bucket past the input stream's last
// sequence.
func fillInputs(ctx context.Context, t *testing.T, js jetstream.JetStream, names subjects.Names, n int) {
	t.Helper()
	s, err := js.Stream(ctx, names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	subject := strings.TrimSuffix(names.RunInputs("s-scale"), ">") + "start"
	acks := make([]jetstream.PubAckFuture, 0, 1000)
	flush := func() {
		for _, a := range acks {
			select {
			case <-a.Ok():
			case err := <-a.Err():
				t.Fatal(err)
			}
		}
		acks = acks[:0]
	}
	for range uint64(n) - min(uint64(n), s.CachedInfo().State.LastSeq) { //nolint:gosec // a count
		a, err := js.PublishAsync(subject, []byte("{}"))
		if err != nil {
			t.Fatal(err)
		}
		if acks = append(acks, a); len(acks) == cap(acks) {
			flush()
		}
	}
	flush()
}

// scaleSearch declares customer a search attribute of every run.
func scaleSearch(string, string) (map[string]string, error) {
	return map[string]string{"customer": "/input/customer"}, nil
}

// writeIndexAtScale writes the index entries of every run in the run
// bucket straight, as the indexer makes them (once per run: it goes on
// from the runs an interrupted test indexed), then leaves the shape mark
// and makes the indexers' consumer with nothing pending, as a caught-up
// deployment has it.
func writeIndexAtScale(ctx context.Context, t *testing.T, js jetstream.JetStream, names subjects.Names, n int) {
	t.Helper()
	writeIndex(ctx, t, js, names, n, scaleRecord)
}

// writeIndex is writeIndexAtScale for runs whose records rec makes.
func writeIndex(ctx context.Context, t *testing.T, js jetstream.JetStream, names subjects.Names, n int, rec func(int) []byte) {
	t.Helper()
	idx, err := js.Stream(ctx, names.IndexStream())
	if err != nil {
		t.Fatal(err)
	}
	var have uint64                                          // heads an interrupted test wrote
	if st := idx.CachedInfo().State; st.Msgs > uint64(4*n) { //nolint:gosec // a count
		// Complete (four messages a run and the shape mark): counting the
		// heads would fill the server's heap just before the listings.
		have = uint64(n) //nolint:gosec // a count
	} else if st, err := idx.Info(ctx, jetstream.WithSubjectFilter(names.IndexHead("*"))); err == nil {
		have = uint64(len(st.State.Subjects))
	}
	if _, err := js.Publish(ctx, names.IndexShapeMark(), []byte(fmt.Sprintf(`{"shape":%d}`, subjects.IndexShape))); err != nil {
		t.Fatal(err)
	}
	cpu0, began := cpuTime(), time.Now()
	acks := make([]jetstream.PubAckFuture, 0, 4000)
	flush := func() {
		for _, a := range acks {
			select {
			case <-a.Ok():
			case err := <-a.Err():
				t.Fatal(err)
			}
		}
		acks = acks[:0]
	}
	// The runs were stored in order, one record each: run i at sequence i+1.
	written := 0
	for i := range n {
		id := fmt.Sprintf("s-%07d", i)
		if uint64(i) < have { //nolint:gosec // a count
			continue
		}
		rev := uint64(i + 1) //nolint:gosec // a count
		e, err := runindex.Build(id, rec(i), rev, began, scaleSearch)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(e)
		h := runindex.Head(e, rev)
		for _, s := range runindex.Subjects(names, id, h) {
			a, err := js.PublishAsync(s, body)
			if err != nil {
				t.Fatal(err)
			}
			acks = append(acks, a)
		}
		hb, _ := json.Marshal(h)
		a, err := js.PublishAsync(names.IndexHead(id), hb)
		if err != nil {
			t.Fatal(err)
		}
		if acks = append(acks, a); len(acks) >= cap(acks)-8 {
			flush()
		}
		written++
	}
	flush()
	c := provision.IndexerConsumerConfig(names, time.Minute, 1000)
	c.DeliverPolicy = jetstream.DeliverNewPolicy // caught up: nothing pending
	if _, err := js.CreateOrUpdateConsumer(ctx, names.KVStream(names.RunBucket()), c); err != nil {
		t.Fatal(err)
	}
	st, err := idx.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if written > 0 {
		t.Logf("wrote the index entries of %d runs (%d before) in %s, %s CPU of this process per run",
			written, have, time.Since(began).Round(time.Millisecond), ((cpuTime() - cpu0) / time.Duration(written)).Round(time.Microsecond))
	}
	t.Logf("index: %d messages, %d bytes, %.0f bytes per run", st.State.Msgs, st.State.Bytes, float64(st.State.Bytes)/float64(n))
}

// indexAtScale runs an indexer until the index holds every run: an
// entry by update, one by start, a customer entry and a head each.
func indexAtScale(ctx context.Context, t *testing.T, js jetstream.JetStream, names subjects.Names, n int) {
	t.Helper()
	var before uint64 // runs indexed by an earlier, interrupted test
	if s, err := js.Stream(ctx, names.IndexStream()); err == nil {
		before = s.CachedInfo().State.Msgs / 4
	}
	cpu0, began := cpuTime(), time.Now()
	x := runindex.New(js, runindex.Config{Search: scaleSearch, Logger: slog.New(slog.DiscardHandler), Concurrency: 16})
	x.Start()
	defer x.Stop()
	// The index stream's count, not the consumer's: a consumer's info
	// counts what is pending, which a million runs make slow.
	var st jetstream.StreamState
	for {
		s, err := js.Stream(ctx, names.IndexStream())
		if err != nil {
			t.Fatal(err)
		}
		if st = s.CachedInfo().State; st.Msgs >= uint64(4*n) { //nolint:gosec // a count
			break
		}
		time.Sleep(time.Second)
	}
	took, cpu, done := time.Since(began), cpuTime()-cpu0, max(1, uint64(n)-before) //nolint:gosec // a count
	t.Logf("indexed %d runs (%d before) in %s (%.0f runs/s), %s CPU of this process (server and indexer) per run; index: %d messages, %d bytes, %.0f bytes per run",
		done, before, took.Round(time.Millisecond), float64(done)/took.Seconds(), (cpu / time.Duration(done)).Round(time.Microsecond), st.Msgs, st.Bytes, float64(st.Bytes)/float64(n))

	x.Stop()
}

// queryAtScale times and checks the listings of TestListAtScale.
func queryAtScale(ctx context.Context, t *testing.T, js jetstream.JetStream) {
	c, err := client.New(ctx, js, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	type query struct {
		name  string
		opts  client.ListOptions
		keep  func(l client.Listed) bool
		empty bool // no run passes the filter
	}
	wf1 := "wf-1"
	failedWf := "wf-2" // run i of wf-2 is failed when (i/5)%5 == 2
	cust := "c-42"
	all := func(client.Listed) bool { return true }
	waiting := func(l client.Listed) bool { return l.Status.Status == wire.StatusWaiting }
	failed := func(l client.Listed) bool {
		return l.Status.Workflow == failedWf && l.Status.Status == wire.StatusFailed
	}
	customer := func(l client.Listed) bool { return l.Search["customer"] == cust }
	queries := []query{
		{name: "--sort update (no filter)", keep: all},
		{name: "--status waiting --sort update", opts: client.ListOptions{Filter: wire.RunFilter{Status: wire.StatusWaiting}}, keep: waiting},
		{name: "--workflow " + failedWf + " --status failed --sort update", opts: client.ListOptions{Filter: wire.RunFilter{Workflow: failedWf, Status: wire.StatusFailed}}, keep: failed},
		{name: "--where customer=" + cust + " --sort update", opts: client.ListOptions{Filter: wire.RunFilter{Where: map[string]string{"customer": cust}}}, keep: customer},
		{name: "--where customer=" + cust + " --workflow " + wf1 + " --sort update", opts: client.ListOptions{Filter: wire.RunFilter{Workflow: wf1, Where: map[string]string{"customer": cust}}}, keep: func(client.Listed) bool { return false }, empty: true},
		{name: "--status removed --sort update (none)", opts: client.ListOptions{Filter: wire.RunFilter{Status: wire.StatusRemoved}}, keep: func(client.Listed) bool { return false }, empty: true},
		{name: "--sort start (no filter)", opts: client.ListOptions{Sort: client.SortStart}, keep: all},
		{name: "--status waiting --sort start", opts: client.ListOptions{Filter: wire.RunFilter{Status: wire.StatusWaiting}, Sort: client.SortStart}, keep: waiting},
		{name: "--workflow " + failedWf + " --status failed --sort start", opts: client.ListOptions{Filter: wire.RunFilter{Workflow: failedWf, Status: wire.StatusFailed}, Sort: client.SortStart}, keep: failed},
		{name: "--where customer=" + cust + " --sort start", opts: client.ListOptions{Filter: wire.RunFilter{Where: map[string]string{"customer": cust}}, Sort: client.SortStart}, keep: customer},
	}
	tries := max(1, *indexTries)
	rows := regexp.MustCompile(*indexRows)
	for _, q := range queries {
		if !rows.MatchString(q.name) {
			continue
		}
		if q.opts.Sort == "" {
			q.opts.Sort = client.SortUpdate
		}
		q.opts.Limit = 50
		var first, second []time.Duration
		var seen []string
		var coldCPU [2]time.Duration // of the first try's pages: this process's, the server's included
		for try := range tries {
			t0, cpu0 := time.Now(), cpuTime()
			p1, err := c.ListRuns(ctx, q.opts)
			first = append(first, time.Since(t0))
			if try == 0 {
				coldCPU[0] = cpuTime() - cpu0
			}
			if err != nil {
				t.Fatalf("%s: %v", q.name, err)
			}
			seen = seen[:0]
			for i, l := range p1.Runs {
				if !q.keep(l) {
					t.Fatalf("%s: run %s (%+v) does not pass the filter", q.name, l.Status.Run, l.Status)
				}
				if q.opts.Sort == client.SortStart && i > 0 && l.StartSeq > p1.Runs[i-1].StartSeq {
					t.Fatalf("%s: run %s started at %d, after run %s before it (%d)", q.name, l.Status.Run, l.StartSeq, p1.Runs[i-1].Status.Run, p1.Runs[i-1].StartSeq)
				}
				seen = append(seen, l.Status.Run)
			}
			if p1.Next == "" {
				continue
			}
			next := q.opts
			next.Cursor = p1.Next
			t0, cpu0 = time.Now(), cpuTime()
			p2, err := c.ListRuns(ctx, next)
			second = append(second, time.Since(t0))
			if try == 0 {
				coldCPU[1] = cpuTime() - cpu0
			}
			if err != nil {
				t.Fatalf("%s page 2: %v", q.name, err)
			}
			for _, l := range p2.Runs {
				if !q.keep(l) || slices.Contains(seen, l.Status.Run) {
					t.Fatalf("%s page 2: run %s is on page 1 or does not pass the filter", q.name, l.Status.Run)
				}
			}
		}
		want := 50
		if strings.Contains(q.name, "customer") {
			want = min(want, max(1, *indexScale/scaleCustomers))
		}
		if !q.empty && len(seen) != want {
			t.Errorf("%s: page 1 holds %d runs, want %d", q.name, len(seen), want)
		}
		// The first try of a row reads blocks no earlier row loaded (cold,
		// after a restart); p50 and p99 are of the tries after it.
		cold := "-"
		if len(second) > 0 {
			cold = fmt.Sprintf("%s (CPU %s)", second[0].Round(10*time.Microsecond), coldCPU[1].Round(10*time.Microsecond))
		}
		t.Logf("%-62s page 1: %d runs, cold %s (CPU %s), then p50 %s p99 %s; page 2 by cursor: cold %s, then p50 %s p99 %s",
			q.name, len(seen), first[0].Round(10*time.Microsecond), coldCPU[0].Round(10*time.Microsecond), pct(first[1:], 50), pct(first[1:], 99), cold, pct(tail(second), 50), pct(tail(second), 99))
	}
}

// tail is ds without its first.
func tail(ds []time.Duration) []time.Duration {
	if len(ds) == 0 {
		return nil
	}
	return ds[1:]
}

func pct(ds []time.Duration, p int) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, (len(s)*p+99)/100-1)].Round(10 * time.Microsecond).String()
}
