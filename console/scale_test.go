package console

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestIndexEveryRunAndPage fills the run bucket with scaleRuns records,
// has a fresh console index them from scratch, and checks that every run
// is indexed, that the filtered pages count and hold what they should,
// and that walking every page, newest first, meets every run once. How
// fast it does so over 100,000 runs is the console-index scenario of
// `jetflow bench`; here nothing is timed.
func TestIndexEveryRunAndPage(t *testing.T) {
	t.Parallel()
	const scaleRuns = 1234 // 25 pages of 50, the last one short
	b := setup(t, setupOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	subject := "$KV." + b.f.Runs.Bucket() + "."
	var acks []jetstream.PubAckFuture
	for i := range scaleRuns {
		a, err := b.f.JS.PublishAsync(subject+fmt.Sprintf("run-%06d", i), record(i))
		if err != nil {
			t.Fatal(err)
		}
		acks = append(acks, a)
	}
	for _, a := range acks {
		select {
		case <-a.Ok():
		case err := <-a.Err():
			t.Fatal(err)
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}

	// A fresh console indexes the bucket from scratch.
	c, err := New(fromFleet(b.f, Config{Logger: quiet()}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer stopCtx(t, c.Stop)
	mux := http.NewServeMux()
	c.Mount(mux)
	get := func(query string) Page {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "/console/api/runs"+query, nil)
		rec := newRecorder()
		mux.ServeHTTP(rec, req)
		if rec.code != http.StatusOK {
			t.Fatalf("GET /api/runs%s: %d %s", query, rec.code, rec.body.String())
		}
		var p Page
		if err := json.Unmarshal([]byte(rec.body.String()), &p); err != nil {
			t.Fatalf("GET /api/runs%s: %v", query, err)
		}
		return p
	}
	var first Page
	for deadline := time.Now().Add(30 * time.Second); ; {
		if first = get(""); first.Loaded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not loaded after 30s: %d of %d runs indexed", first.Total, scaleRuns)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if first.Total != scaleRuns || first.Matched != scaleRuns {
		t.Fatalf("indexed %d runs (matched %d), want %d", first.Total, first.Matched, scaleRuns)
	}

	// Filtered pages: each counts the runs its filter keeps, and holds the
	// most recent of them.
	half := uint64(scaleRuns/2) + 1 // run i was stored at revision i+1
	for _, q := range []struct {
		query string
		keep  func(i int) bool
		// cursor narrows the page, not the count.
		cursor bool
	}{
		{"", func(int) bool { return true }, false},
		{"?status=waiting", func(i int) bool { return statusCycle[i%len(statusCycle)] == "waiting" }, false},
		{"?workflow=wf-2&status=failed", func(i int) bool { return i%3 == 2 && statusCycle[i%len(statusCycle)] == "failed" }, false},
		{"?q=run-0009", func(i int) bool { return strings.Contains(fmt.Sprintf("run-%06d", i), "run-0009") }, false},
		{"?before=" + strconv.FormatUint(half, 10), func(i int) bool { return uint64(i+1) < half }, true},
	} {
		var want []string
		matched := 0
		for i := scaleRuns - 1; i >= 0; i-- {
			if q.cursor || q.keep(i) {
				matched++
			}
			if q.keep(i) && len(want) < 50 {
				want = append(want, fmt.Sprintf("run-%06d", i))
			}
		}
		p := get(q.query)
		if p.Matched != matched || p.Total != scaleRuns {
			t.Errorf("GET /api/runs%s: matched %d of %d, want %d of %d", q.query, p.Matched, p.Total, matched, scaleRuns)
		}
		var got []string
		for _, s := range p.Runs {
			got = append(got, s.ID)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("GET /api/runs%s: runs %v, want %v", q.query, got, want)
		}
	}

	// Every page, newest first, following the cursors.
	seen := map[string]bool{}
	prev, pages := uint64(math.MaxUint64), 0
	for query := ""; ; pages++ {
		p := get(query)
		for _, s := range p.Runs {
			if seen[s.ID] || s.Rev >= prev {
				t.Fatalf("page %d: run %s (rev %d) again or out of order", pages+1, s.ID, s.Rev)
			}
			seen[s.ID], prev = true, s.Rev
		}
		if p.Next == 0 {
			if len(p.Runs) == 0 {
				t.Fatalf("page %d is empty", pages+1)
			}
			pages++
			break
		}
		query = "?before=" + strconv.FormatUint(p.Next, 10)
	}
	if len(seen) != scaleRuns || pages != (scaleRuns+49)/50 {
		t.Errorf("%d pages held %d runs, want %d pages of %d", pages, len(seen), (scaleRuns+49)/50, scaleRuns)
	}
}

// recorder is a minimal http.ResponseWriter.
type recorder struct {
	h    http.Header
	code int
	body strings.Builder
}

func newRecorder() *recorder { return &recorder{h: http.Header{}, code: 200} }

func (r *recorder) Header() http.Header         { return r.h }
func (r *recorder) WriteHeader(code int)        { r.code = code }
func (r *recorder) Write(p []byte) (int, error) { return r.body.WriteString(string(p)) }
