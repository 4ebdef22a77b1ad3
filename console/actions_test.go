package console

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// flakyDoc runs one task, which fails until the test fixes it.
const flakyDoc = `{"$workflow":"0.2","revision":"flaky/1","initial":"work","states":{
 "work":{"work":{"task":"flaky","version":"1"},"then":"done"},"done":{"final":true}}}`

// serveFlaky deploys flakyDoc and serves its task: a non-retryable
// failure until fixed is set.
func (b *bundle) serveFlaky(t *testing.T) *atomic.Bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.f.Deploy(ctx, "flaky", []byte(flakyDoc)); err != nil {
		t.Fatal(err)
	}
	var fixed atomic.Bool
	w, err := worker.New(b.f.JS, worker.Config{Names: b.f.Names, PollWait: 500 * time.Millisecond, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	err = w.Register("flaky", "1", func(ctx context.Context, inv worker.Invocation) (any, error) {
		if !fixed.Load() {
			return nil, worker.NonRetryable(errors.New("the flaky service is down"))
		}
		return map[string]any{"ok": true}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopCtx(t, w.Stop) })
	return &fixed
}

// postJSON posts an action and decodes its answer into v.
func (b *bundle) postJSON(t *testing.T, path, body string, v any) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Jetflow-Console", "1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("POST %s: %d %s: %v", path, res.StatusCode, raw, err)
		}
	}
	return res.StatusCode
}

// TestRedriveAction: a failed run is redriven from the console, onto the
// latest revision of its workflow, and runs to its end; a run that has
// not failed and a revision that does not exist are refused.
func TestRedriveAction(t *testing.T) {
	b := setup(t, setupOptions{actions: true})
	fixed := b.serveFlaky(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.f.Client.StartRun(ctx, "flaky", "rd-1", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(t, "rd-1", "failed")
	var v runView
	b.get(t, "/api/runs/rd-1", &v)
	if !strings.HasPrefix(v.Commands.Redrive, "jetflow redrive rd-1") {
		t.Errorf("redrive command %q", v.Commands.Redrive)
	}
	var e apiError
	if status := b.postJSON(t, "/api/runs/rd-1/redrive", `{"revision":"flaky/9"}`, &e); status != http.StatusNotFound || !strings.Contains(e.Error, "flaky/9") {
		t.Errorf("redrive to a revision that does not exist: %d %q", status, e.Error)
	}
	b.startOrder(t, "rd-waiting")
	if status := b.postJSON(t, "/api/runs/rd-waiting/redrive", `{}`, &e); status != http.StatusConflict || !strings.Contains(e.Error, "only a failed run") {
		t.Errorf("redrive of a waiting run: %d %q", status, e.Error)
	}

	fixed.Store(true)
	var got struct {
		OK     bool   `json:"ok"`
		Seq    uint64 `json:"seq"`
		Status string `json:"status"`
	}
	status := b.postJSON(t, "/api/runs/rd-1/redrive", `{"reason":"service fixed","revision":"latest"}`, &got)
	if (status != http.StatusOK && status != http.StatusAccepted) || !got.OK || got.Seq == 0 {
		t.Fatalf("redrive: %d %+v", status, got)
	}
	b.waitStatus(t, "rd-1", "done")
	// Done now: a second redrive is refused before anything is sent.
	if status := b.postJSON(t, "/api/runs/rd-1/redrive", `{}`, &e); status != http.StatusConflict {
		t.Errorf("redrive of a done run: %d %q", status, e.Error)
	}
}

// bulkCountView decodes a count.
type bulkCountView struct {
	Matched  int            `json:"matched"`
	Eligible int            `json:"eligible"`
	Filter   wire.RunFilter `json:"filter"`
	Command  string         `json:"command"`
}

// jobJSON decodes a job as the API shows it.
type jobJSON struct {
	wire.Job
	Command string `json:"command"`
}

// TestBulkActions: the console counts the runs a filter matches, shows
// the command that submits the same job, submits it as the CLI does, and
// the dispatchers carry it out: the matching runs are cancelled, the
// others are not. The job is listed, streamed and refused a late cancel.
func TestBulkActions(t *testing.T) {
	b := setup(t, setupOptions{actions: true})
	for i := range 3 {
		b.startOrder(t, fmt.Sprintf("bulk-%d", i))
	}
	b.serveFlaky(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.f.Client.StartRun(ctx, "flaky", "bulk-failed", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(t, "bulk-failed", "failed")

	for body, want := range map[string]string{
		`{"operation":"cancel","filter":{}}`:                                        "choose a filter",
		`{"operation":"explode","filter":{"workflow":"order"}}`:                     "not a bulk operation",
		`{"operation":"terminate","filter":{"workflow":"order"}}`:                   "needs a reason",
		`{"operation":"cancel","filter":{"status":"sleeping"}}`:                     `status "sleeping"`,
		`{"operation":"cancel","filter":{"startedAfter":"yesterday"}}`:              "startedAfter",
		`{"operation":"cancel","filter":{"workflow":"order","match":{"$bad":1}}}`:   "match",
		`{"operation":"cancel","filter":{"workflow":"order"},"extra":true}`:         "not the expected JSON",
		`{"operation":"cancel","filter":{"workflow":"a.b"}}`:                        "workflow",
		`{"operation":"cancel","filter":{"workflow":"order","revision":"x","q":1}}`: "not the expected JSON",
	} {
		var e apiError
		if status := b.postJSON(t, "/api/bulk/count", body, &e); status != http.StatusBadRequest || !strings.Contains(e.Error, want) {
			t.Errorf("count %s: %d %q, want 400 mentioning %q", body, status, e.Error, want)
		}
	}

	// Every run of workflow order, by a start time given as a duration
	// ago: the three waiting runs, all can be cancelled.
	var n bulkCountView
	body := `{"operation":"cancel","reason":"clean up","filter":{"workflow":"order","startedAfter":"1h"}}`
	if status := b.postJSON(t, "/api/bulk/count", body, &n); status != http.StatusOK {
		t.Fatalf("count: %d %+v", status, n)
	}
	if n.Matched != 3 || n.Eligible != 3 {
		t.Errorf("count: matched %d, eligible %d, want 3 and 3", n.Matched, n.Eligible)
	}
	after, err := time.Parse(time.RFC3339Nano, n.Filter.StartedAfter)
	if err != nil || time.Since(after) < 59*time.Minute {
		t.Errorf("startedAfter resolved to %q (%v), want an hour ago", n.Filter.StartedAfter, err)
	}
	want := "jetflow cancel --workflow order --started-after " + n.Filter.StartedAfter + " --reason 'clean up' --yes --nats " + b.f.URL()
	if !strings.HasPrefix(n.Command, want) {
		t.Errorf("command %q, want it to start %q", n.Command, want)
	}
	// A pause of failed runs: one matches, none can take it.
	var p bulkCountView
	if b.postJSON(t, "/api/bulk/count", `{"operation":"pause","filter":{"status":"failed"}}`, &p); p.Matched != 1 || p.Eligible != 0 {
		t.Errorf("pause of failed runs: matched %d, eligible %d, want 1 and 0", p.Matched, p.Eligible)
	}

	jobs := b.jobEvents(t)
	var j jobJSON
	submit, _ := json.Marshal(map[string]any{"operation": "cancel", "reason": "clean up", "filter": n.Filter})
	if status := b.postJSON(t, "/api/jobs", string(submit), &j); status != http.StatusCreated || j.ID == "" || j.By != "console" {
		t.Fatalf("submit: %d %+v", status, j)
	}
	if j.Command != n.Command {
		t.Errorf("job command %q, want the count's %q", j.Command, n.Command)
	}
	natstest.WaitFor(t, 30*time.Second, "job "+j.ID+" to be done", func() error {
		var now jobJSON
		if status, raw := b.get(t, "/api/jobs/"+j.ID, &now); status != http.StatusOK {
			return fmt.Errorf("GET job: %d %s", status, raw)
		}
		if now.State != wire.JobDone {
			return fmt.Errorf("job is %s (%d/%d)", now.State, now.Sent, now.Matched)
		}
		if now.Sent != 3 {
			t.Fatalf("job done with %d sent, want 3: %+v", now.Sent, now)
		}
		return nil
	})
	for i := range 3 {
		b.waitStatus(t, fmt.Sprintf("bulk-%d", i), "cancelled")
	}
	if st, err := b.f.Client.Status(ctx, "bulk-failed"); err != nil || st.Status != "failed" {
		t.Errorf("the run the filter does not match: %v %v", st, err)
	}
	natstest.WaitFor(t, 10*time.Second, "the job's end on its event stream", func() error {
		for {
			select {
			case ev := <-jobs:
				if ev.ID == j.ID && ev.State == wire.JobDone {
					return nil
				}
			default:
				return errors.New("not seen yet")
			}
		}
	})

	var list struct {
		Jobs []jobJSON `json:"jobs"`
	}
	if b.get(t, "/api/jobs", &list); len(list.Jobs) != 1 || list.Jobs[0].ID != j.ID || list.Jobs[0].Command == "" {
		t.Errorf("jobs: %+v", list.Jobs)
	}
	var e apiError
	if status := b.postJSON(t, "/api/jobs/"+j.ID+"/cancel", `{}`, &e); status != http.StatusConflict || !strings.Contains(e.Error, "ended") {
		t.Errorf("cancel of a done job: %d %q", status, e.Error)
	}
	if status := b.postJSON(t, "/api/jobs/nosuchjob/cancel", `{}`, &e); status != http.StatusNotFound {
		t.Errorf("cancel of no job: %d %q", status, e.Error)
	}
	if status, raw := b.get(t, "/api/jobs/nosuchjob", &e); status != http.StatusNotFound {
		t.Errorf("GET no job: %d %s", status, raw)
	}
}

// jobEvents reads the job event stream in the background until the test
// ends.
func (b *bundle) jobEvents(t *testing.T) <-chan jobJSON {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/api/jobs/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		cancel()
		t.Fatalf("job event stream: %d, content type %q", res.StatusCode, ct)
	}
	out := make(chan jobJSON, 256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = res.Body.Close() }()
		for ev := range readEvents(res.Body, "job") {
			var j jobJSON
			if json.Unmarshal(ev, &j) == nil {
				select {
				case out <- j:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return out
}

// TestActionsOff: a read-only console refuses every action, and changes
// nothing.
func TestActionsOff(t *testing.T) {
	b := setup(t, setupOptions{})
	b.startOrder(t, "ro-1")
	for _, c := range []struct{ path, body string }{
		{"/api/runs/ro-1/event", `{"type":"payment"}`},
		{"/api/runs/ro-1/cancel", `{}`},
		{"/api/runs/ro-1/pause", `{}`},
		{"/api/runs/ro-1/resume", `{}`},
		{"/api/runs/ro-1/terminate", `{"reason":"no"}`},
		{"/api/runs/ro-1/redrive", `{}`},
		{"/api/bulk/count", `{"operation":"cancel","filter":{"workflow":"order"}}`},
		{"/api/jobs", `{"operation":"cancel","filter":{"workflow":"order"}}`},
		{"/api/jobs/somejob/cancel", `{}`},
		{"/api/schedules", `{"name":"ro","workflow":"order","every":"1s"}`},
		{"/api/schedules/ro/update", `{"every":"2s"}`},
		{"/api/schedules/ro/pause", `{}`},
		{"/api/schedules/ro/resume", `{}`},
		{"/api/schedules/ro/trigger", `{}`},
		{"/api/schedules/ro/delete", `{}`},
	} {
		var e apiError
		if status := b.postJSON(t, c.path, c.body, &e); status != http.StatusForbidden || !strings.Contains(e.Error, "--console-actions") {
			t.Errorf("POST %s on a read-only console: %d %q", c.path, status, e.Error)
		}
	}
	var list struct {
		Jobs []jobJSON `json:"jobs"`
	}
	if status, raw := b.get(t, "/api/jobs", &list); status != http.StatusOK || len(list.Jobs) != 0 {
		t.Errorf("jobs: %d %s", status, raw)
	}
	if st, err := b.f.Client.Status(context.Background(), "ro-1"); err != nil || st.Status != "waiting" {
		t.Errorf("run ro-1 after refused actions: %v %v", st, err)
	}
}

// readEvents yields the data of each server-sent event named name.
func readEvents(r io.Reader, name string) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == name:
				if !yield([]byte(strings.TrimPrefix(line, "data: "))) {
					return
				}
			}
		}
	}
}

// TestCancelJob: a job no dispatcher has taken yet is cancelled from the
// console, and its event stream shows it cancelled (after pending, unless
// the stream's watch began with the job's latest value).
func TestCancelJob(t *testing.T) {
	b := setup(t, setupOptions{actions: true, jobsOff: true})
	b.startOrder(t, "cj-1")
	jobs := b.jobEvents(t)
	var j jobJSON
	if status := b.postJSON(t, "/api/jobs", `{"operation":"pause","filter":{"workflow":"order"}}`, &j); status != http.StatusCreated || j.State != wire.JobPending {
		t.Fatalf("submit: %d %+v", status, j)
	}
	var e apiError
	if status, raw := b.get(t, "/api/jobs/a*b", &e); status != http.StatusBadRequest {
		t.Errorf("GET a job by a bad id: %d %s", status, raw)
	}
	var got jobJSON
	if status := b.postJSON(t, "/api/jobs/"+j.ID+"/cancel", `{}`, &got); status != http.StatusOK || got.State != wire.JobCancelled {
		t.Fatalf("cancel: %d %+v", status, got)
	}
	var states []string
	natstest.WaitFor(t, 10*time.Second, "the job pending then cancelled on its event stream", func() error {
		for {
			select {
			case ev := <-jobs:
				if ev.ID == j.ID {
					states = append(states, ev.State)
				}
			default:
				// A watch that starts while the job is written may get
				// its latest value only, so pending may be folded into
				// cancelled; nothing else may show, and cancelled last.
				if seen := strings.Join(states, " "); seen != "pending cancelled" && seen != "cancelled" {
					return fmt.Errorf("states seen: %v", states)
				}
				return nil
			}
		}
	})
	// Nothing was paused: the job was cancelled before anyone took it.
	if st, err := b.f.Client.Status(context.Background(), "cj-1"); err != nil || st.Status != "waiting" {
		t.Errorf("run cj-1: %v %v", st, err)
	}
}

// FuzzResolveTime: a start-time bound is refused or becomes an RFC 3339
// time, never anything else.
func FuzzResolveTime(f *testing.F) {
	for _, s := range []string{"", "1h", "90m", "-2h", "2026-12-01T10:00:00Z", "2026-12-01T10:00:00.5+02:00", "yesterday", "1e9h", " 2h ", "-2562047h", "0000-01-01T00:00:00Z"} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		got, err := resolveTime("startedAfter", v, now)
		if err != nil {
			if !strings.Contains(err.Error(), "startedAfter") {
				t.Fatalf("error %q does not name the field", err)
			}
			return
		}
		if got == "" {
			if strings.TrimSpace(v) != "" {
				t.Fatalf("%q resolved to nothing", v)
			}
			return
		}
		if _, err := time.Parse(time.RFC3339Nano, got); err != nil {
			t.Fatalf("%q resolved to %q, not RFC 3339: %v", v, got, err)
		}
	})
}
