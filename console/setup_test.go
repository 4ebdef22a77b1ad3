package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/bulk"
	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/runindex"
	"github.com/jetflow/jetflow/worker"
)

func TestMain(m *testing.M) {
	runindex.VerifyBuild()
	goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...)
}

// hostile is markup and script that run data must never become: every
// test run puts it in inputs, payloads and task outputs.
const hostile = `</script><script>window.__xss=1</script><img src=x onerror="window.__xss=2"><svg onload="window.__xss=3">`

// bundle is a running deployment with the demo workflow deployed, its
// tasks served by Go SDK workers, and the console in front of it.
type bundle struct {
	f   *fleet.Fleet
	c   *Console
	srv *httptest.Server
	url string // the console's base URL
}

type setupOptions struct {
	actions bool
	// jobsOff leaves bulk jobs pending: no dispatcher takes them.
	jobsOff bool
}

func setup(t *testing.T, o setupOptions) *bundle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := fleet.Start(ctx, fleet.Config{
		Embedded:   embedded.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir()},
		Dispatcher: &dispatcher.Config{Jobs: bulk.Config{Off: o.jobsOff}},
		Logger:     quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopCtx(t, f.Stop) })
	doc, err := os.ReadFile(filepath.Join("..", "examples", "order.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Deploy(ctx, "order", doc); err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(f.JS, worker.Config{Names: f.Names, PollWait: 500 * time.Millisecond, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	for task, out := range orderTasks {
		if err := w.Register(task, "1", func(ctx context.Context, inv worker.Invocation) (any, error) { return out, nil }); err != nil {
			t.Fatal(err)
		}
	}
	// The worker runs until Stop; ctx only bounds setting up.
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopCtx(t, w.Stop) })

	c, err := New(fromFleet(f, Config{Actions: o.actions, NATSURL: f.URL(), Prefix: f.Names.Prefix(), Logger: quiet()}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	c.Mount(mux)
	srv := httptest.NewServer(mux)
	// The console ends its event streams first: the test server waits for
	// every open request when it closes.
	t.Cleanup(srv.Close)
	t.Cleanup(func() { stopCtx(t, c.Stop) })
	b := &bundle{f: f, c: c, srv: srv, url: srv.URL + "/console"}
	natstest.WaitFor(t, 10*time.Second, "the console's index to load", func() error {
		if !c.Loaded() {
			return fmt.Errorf("not loaded")
		}
		return nil
	})
	return b
}

// orderTasks are the outputs of the demo workflow's tasks: in stock,
// cheap, trusted, each carrying hostile text.
var orderTasks = map[string]any{
	"check-stock": map[string]any{"available": true, "note": hostile},
	"quote-price": map[string]any{"total": 25, "label": hostile},
	"score-fraud": map[string]any{"score": 0.1},
	"ship":        map[string]any{"tracking": "T-1 " + hostile},
	"notify":      map[string]any{"sent": true},
}

// startOrder starts a run of the demo workflow and waits until it waits
// for its payment.
func (b *bundle) startOrder(t *testing.T, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	input := map[string]any{"sku": "KB-42 " + hostile, "qty": 1, "customer": hostile}
	if err := b.f.Client.StartRun(ctx, "order", id, input); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(t, id, "waiting")
}

func (b *bundle) waitStatus(t *testing.T, id, status string) {
	t.Helper()
	natstest.WaitFor(t, 20*time.Second, "run "+id+" to be "+status, func() error {
		st, err := b.f.Client.Status(context.Background(), id)
		if err != nil {
			return err
		}
		if st.Status != status {
			return fmt.Errorf("run %s is %s", id, st.Status)
		}
		return nil
	})
}

// get reads a JSON endpoint into v and returns the status and raw body.
func (b *bundle) get(t *testing.T, path string, v any) (int, []byte) {
	t.Helper()
	res, err := http.Get(b.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	var raw json.RawMessage
	if err := json.NewDecoder(res.Body).Decode(&raw); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("GET %s: %v in %s", path, err, raw)
		}
	}
	return res.StatusCode, raw
}

func stopCtx(t *testing.T, stop func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := stop(ctx); err != nil {
		t.Logf("stop: %v", err)
	}
}

// quiet discards logs below errors.
func quiet() *slog.Logger {
	return slog.New(slog.NewTextHandler(logOut(), &slog.HandlerOptions{Level: logLevel()}))
}

func logLevel() slog.Level {
	if os.Getenv("JETFLOW_TEST_LOG") != "" {
		return slog.LevelDebug
	}
	return slog.LevelError
}

func logOut() io.Writer {
	if os.Getenv("JETFLOW_TEST_LOG") != "" {
		return os.Stderr
	}
	return io.Discard
}

// hostileWorkflow names its states and DAG nodes with markup.
const hostileWorkflow = `{"$workflow":"0.2","revision":"h1","initial":"<img src=x onerror=\"window.__xss=4\">","states":{
 "<img src=x onerror=\"window.__xss=4\">":{"work":{"dag":{"$dag":"0.1",
   "nodes":{"in":{"kind":"input"},"<svg onload=\"window.__xss=5\">":{"kind":"task","run":"check-stock","version":"1"},"out":{"kind":"output"}},
   "edges":[{"from":"in","to":"<svg onload=\"window.__xss=5\">"},{"from":"<svg onload=\"window.__xss=5\">","to":"out","port":"<script>window.__xss=6</script>"}]}},
  "then":"</title><script>window.__xss=7</script>"},
 "</title><script>window.__xss=7</script>":{"final":true}}}`

func (b *bundle) deployHostile(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.f.Deploy(ctx, "hostile", []byte(hostileWorkflow)); err != nil {
		t.Fatal(err)
	}
}

// fromFleet fills the connection fields of cfg from a running fleet.
func fromFleet(f *fleet.Fleet, cfg Config) Config {
	cfg.JS, cfg.Names, cfg.Runs, cfg.Registry, cfg.Client = f.JS, f.Names, f.Runs, f.Registry, f.Client
	return cfg
}
