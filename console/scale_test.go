package console

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/natstest"
)

// TestScale fills the run bucket with JETFLOW_CONSOLE_SCALE records
// (100000 is the figure) and reports how long the console takes
// to index them and to serve pages. It measures and logs; it asserts only
// that every run is indexed and every page answers. Skipped unless the
// variable is set: it takes a minute.
func TestScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("JETFLOW_CONSOLE_SCALE"))
	if n <= 0 {
		t.Skip("set JETFLOW_CONSOLE_SCALE=100000 to measure the console over that many runs")
	}
	b := setup(t, setupOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	subject := "$KV." + b.f.Runs.Bucket() + "."
	for i := 0; i < n; i += 1000 {
		var acks []jetstream.PubAckFuture
		for j := i; j < min(i+1000, n); j++ {
			a, err := b.f.JS.PublishAsync(subject+fmt.Sprintf("run-%06d", j), record(j))
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
	}
	t.Logf("stored %d run records in %s", n, time.Since(began).Round(time.Millisecond))

	// A fresh console indexes the bucket from scratch.
	c, err := New(FromFleet(b.f, Config{Logger: quiet()}))
	if err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer stopCtx(t, c.Stop)
	natstest.WaitFor(t, 5*time.Minute, "the index to load", func() error {
		if !c.Loaded() {
			return fmt.Errorf("%d runs indexed", c.idx.counts().Total)
		}
		return nil
	})
	t.Logf("indexed %d runs in %s", c.idx.counts().Total, time.Since(began).Round(time.Millisecond))
	if got := c.idx.counts().Total; got < n {
		t.Fatalf("indexed %d runs, want at least %d", got, n)
	}

	mux := http.NewServeMux()
	c.Mount(mux)
	for _, q := range []string{"", "?status=waiting", "?workflow=wf-2&status=failed", "?q=run-0999", "?before=" + strconv.Itoa(n/2)} {
		began = time.Now()
		const tries = 20
		for range tries {
			req, _ := http.NewRequest(http.MethodGet, "/console/api/runs"+q, nil)
			rec := newRecorder()
			mux.ServeHTTP(rec, req)
			if rec.code != 200 {
				t.Fatalf("GET %s: %d", q, rec.code)
			}
		}
		t.Logf("GET /api/runs%s: %s a page", q, (time.Since(began) / tries).Round(time.Microsecond))
	}
}

// recorder is a minimal http.ResponseWriter.
type recorder struct {
	h    http.Header
	code int
	n    int
}

func newRecorder() *recorder { return &recorder{h: http.Header{}, code: 200} }

func (r *recorder) Header() http.Header         { return r.h }
func (r *recorder) WriteHeader(code int)        { r.code = code }
func (r *recorder) Write(p []byte) (int, error) { r.n += len(p); return len(p), nil }
