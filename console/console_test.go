package console

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/graph"
	"github.com/jetflow/jetflow/natstest"
)

// TestRunEndpoints follows one run of the demo workflow through the JSON
// endpoints: the list, the run with its marked diagram and DAG, its
// history with the replay check, an event sent from the console and the
// run settling, announced on the event stream.
func TestRunEndpoints(t *testing.T) {
	b := setup(t, setupOptions{actions: true})
	b.startOrder(t, "order-1")

	var page Page
	natstest.WaitFor(t, 10*time.Second, "the run in the list", func() error {
		b.get(t, "/api/runs?status=waiting", &page)
		if len(page.Runs) != 1 || page.Runs[0].ID != "order-1" {
			return fmt.Errorf("page %+v", page)
		}
		return nil
	})
	if r := page.Runs[0]; r.Workflow != "order" || r.Revision != "order-1" || r.State != "/states/await-payment" || r.Started == 0 || r.Settled != 0 {
		t.Fatalf("summary %+v", r)
	}

	var v runView
	status, raw := b.get(t, "/api/runs/order-1", &v)
	if status != http.StatusOK {
		t.Fatalf("GET run: %d %s", status, raw)
	}
	assertNoMarkup(t, "run", raw)
	if v.Status != "waiting" || len(v.Awaiting) != 1 || v.Awaiting[0].Event != "payment" {
		t.Fatalf("run view: status %s awaiting %+v", v.Status, v.Awaiting)
	}
	if !strings.Contains(v.Chart, `class="jf-node jf-wait jf-active" data-id="/states/await-payment"`) ||
		!strings.Contains(v.Chart, `class="jf-node jf-work jf-visited" data-id="/states/check"`) {
		t.Fatalf("chart does not mark the run:\n%s", v.Chart)
	}
	if v.DAG != nil {
		t.Fatalf("a waiting run shows the DAG of %s, want none", v.DAG.State)
	}
	if in, _ := v.Input.(map[string]any); in["customer"] != hostile {
		t.Fatalf("input %v: hostile text not kept as text", v.Input)
	}
	if !strings.Contains(v.Commands.Event, "jetflow event order-1 payment") || !strings.Contains(v.Commands.Event, "--nats "+b.f.URL()) {
		t.Fatalf("event command %q", v.Commands.Event)
	}

	var d dagView
	b.get(t, "/api/runs/order-1/dag?state=/states/check", &d)
	done := 0
	for _, n := range d.Nodes {
		if n.Status == string(graph.StatusDone) {
			done++
		}
	}
	if done != len(d.Nodes) || !strings.Contains(d.SVG, "jf-done") {
		t.Fatalf("DAG of a completed work state: %+v", d.Nodes)
	}

	var h historyView
	_, raw = b.get(t, "/api/runs/order-1/history", &h)
	assertNoMarkup(t, "history", raw)
	kinds := map[string]int{}
	for _, e := range h.Entries {
		kinds[e.Kind]++
	}
	if kinds["start"] != 1 || kinds["result"] != 3 || h.Replay.Verdict != "equal" {
		t.Fatalf("history kinds %v, replay %+v", kinds, h.Replay)
	}
	// The start invokes three tasks, announces the status and arms the
	// attempts' deadline timer.
	effects := map[string]int{}
	for _, e := range h.Entries[0].Effects {
		effects[e.Kind]++
	}
	if first := h.Entries[0]; first.Outcome != "applied" || first.Effects[0].Kind != "invoke" ||
		effects["invoke"] != 3 || effects["status"] != 1 || effects["timer"] != 1 || len(first.Effects) != 5 {
		t.Fatalf("the start's effects: %+v", first.Effects)
	}
	for _, e := range h.Entries {
		if e.Outcome != "applied" || e.Why != "" {
			t.Errorf("entry %d (%s): %s %q, want applied", e.Seq, e.Kind, e.Outcome, e.Why)
		}
	}

	// Follow the run's events while the console sends the payment.
	events := b.events(t, "?run=order-1")
	res := b.post(t, "/api/runs/order-1/event", `{"type":"payment","payload":{"amount":30,"note":`+jsonString(hostile)+`}}`, nil)
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("send event: %d", res.StatusCode)
	}
	b.waitStatus(t, "order-1", "done")
	natstest.WaitFor(t, 10*time.Second, "an event saying the run is done", func() error {
		for {
			select {
			case ev := <-events:
				for _, r := range ev.Runs {
					if r.ID == "order-1" && r.Status == "done" {
						return nil
					}
				}
			default:
				return fmt.Errorf("not yet")
			}
		}
	})
	_, raw = b.get(t, "/api/runs/order-1", &v)
	assertNoMarkup(t, "settled run", raw)
	if v.Status != "done" || v.Settled == 0 || len(v.Result) == 0 {
		t.Fatalf("settled run: %+v", v.Summary)
	}
	res = b.post(t, "/api/runs/order-1/cancel", `{"reason":"late"}`, nil)
	if res.StatusCode != http.StatusConflict {
		t.Fatalf("cancel of a done run: %d", res.StatusCode)
	}

	// An event after the end shows in the history as rejected, saying why.
	if err := b.f.Client.SendEvent(context.Background(), "order-1", "late", nil); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 10*time.Second, "the late event rejected in the history", func() error {
		b.get(t, "/api/runs/order-1/history", &h)
		last := h.Entries[len(h.Entries)-1]
		if last.Kind != "event" || last.Outcome != "rejected" || last.Why != `run "order-1" is done` {
			return fmt.Errorf("last entry %s: %s %q", last.Kind, last.Outcome, last.Why)
		}
		return nil
	})
}

// TestWorkflowEndpoints lists the deployed workflow with its active runs
// and draws it.
func TestWorkflowEndpoints(t *testing.T) {
	b := setup(t, setupOptions{})
	b.startOrder(t, "w-1")
	var list workflowsView
	natstest.WaitFor(t, 10*time.Second, "one active run of order-1", func() error {
		b.get(t, "/api/workflows", &list)
		if len(list.Workflows) != 1 || list.Workflows[0].Revisions[0].Active != 1 {
			return fmt.Errorf("%+v", list)
		}
		return nil
	})
	var wv workflowView
	b.get(t, "/api/workflows/order", &wv)
	if wv.Revision != "order-1" || len(wv.WorkStates) != 3 || !strings.HasPrefix(wv.Chart, "<svg") || strings.Contains(wv.Chart, "jf-active") {
		t.Fatalf("workflow view: %+v", wv.workflowItem)
	}
	var d dagView
	b.get(t, "/api/workflows/order/dag?state=/states/check", &d)
	if len(d.Nodes) != 6 {
		t.Fatalf("DAG nodes %+v", d.Nodes)
	}
}

// TestErrors: every bad request gets a JSON error naming what is wrong.
func TestErrors(t *testing.T) {
	b := setup(t, setupOptions{})
	b.startOrder(t, "e-1")
	cases := []struct {
		path   string
		status int
		want   string
	}{
		{"/api/runs?status=sleeping", 400, `status "sleeping" is not a run status`},
		{"/api/runs?limit=0", 400, "limit"},
		{"/api/runs?before=x", 400, "cursor"},
		{"/api/runs/nope", 404, "not found"},
		{"/api/runs/a.b", 400, "'.'"},
		{"/api/runs/e-1/dag?state=/states/decide", 400, "not a work state"},
		{"/api/workflows/nope", 404, "not found"},
		{"/api/nothing", 404, "no API endpoint"},
	}
	for _, c := range cases {
		var e apiError
		status, raw := b.get(t, c.path, &e)
		if status != c.status || !strings.Contains(e.Error, c.want) {
			t.Errorf("GET %s: %d %s, want %d mentioning %q", c.path, status, raw, c.status, c.want)
		}
	}
	// Actions are refused when off, and from other sites when on.
	res := b.post(t, "/api/runs/e-1/event", `{"type":"payment"}`, nil)
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("event on a read-only console: %d", res.StatusCode)
	}
	b.c.cfg.Actions = true
	b.c.cfg.Client = b.f.Client
	for name, hdr := range map[string]http.Header{
		"no header":      {"X-Jetflow-Console": nil},
		"foreign origin": {"Origin": {"https://evil.example"}},
	} {
		if res := b.post(t, "/api/runs/e-1/cancel", `{}`, hdr); res.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d", name, res.StatusCode)
		}
	}
	for body, want := range map[string]int{
		`{"type":"a.b"}`:         400,
		`{"type":"x","extra":1}`: 400,
		`{"type":"payment","payload":` + strings.Repeat("[", 10) + `}`: 400,
	} {
		if res := b.post(t, "/api/runs/e-1/event", body, nil); res.StatusCode != want {
			t.Errorf("event %s: %d, want %d", body, res.StatusCode, want)
		}
	}
}

// TestPageAndAssets: the page carries configuration only, every response
// forbids inline script, and the stylesheet carries the diagrams' style.
func TestPageAndAssets(t *testing.T) {
	b := setup(t, setupOptions{})
	for _, path := range []string{"/", "/runs/%3Cscript%3E", "/workflows", "/workflows/order"} {
		res, err := http.Get(b.url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		csp := res.Header.Get("Content-Security-Policy")
		if res.StatusCode != 200 || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("GET %s: %d, CSP %q", path, res.StatusCode, csp)
		}
		if strings.Contains(string(body), "<script>") || !strings.Contains(string(body), `data-base="/console"`) {
			t.Errorf("GET %s: page %s", path, body)
		}
	}
	res, err := http.Get(b.url + "/static/app.css")
	if err != nil {
		t.Fatal(err)
	}
	css, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if !strings.Contains(string(css), ".jf-active") {
		t.Error("app.css lacks the diagram style")
	}
	for _, path := range []string{"/static/index.html", "/static/nope.js", "/static/../console.go"} {
		res, err := http.Get(b.url + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != 404 {
			t.Errorf("GET %s: %d", path, res.StatusCode)
		}
	}
}

// assertNoMarkup fails when a JSON response carries a raw '<': encoding/
// json writes it as \u003c, so no response can be sniffed as markup.
func assertNoMarkup(t *testing.T, what string, raw []byte) {
	t.Helper()
	if strings.ContainsAny(string(raw), "<>") {
		i := strings.IndexAny(string(raw), "<>")
		t.Fatalf("%s: raw markup in the JSON at %d: %s", what, i, raw[max(0, i-80):min(len(raw), i+80)])
	}
}

func (b *bundle) post(t *testing.T, path, body string, hdr http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Jetflow-Console", "1")
	for k, v := range hdr {
		req.Header.Del(k)
		for _, s := range v {
			req.Header.Add(k, s)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res
}

// events reads an event stream in the background until the test ends.
func (b *bundle) events(t *testing.T, query string) <-chan runsEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/api/events"+query, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		cancel()
		t.Fatalf("event stream content type %q", ct)
	}
	out := make(chan runsEvent, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = res.Body.Close() }()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "runs":
				var ev runsEvent
				if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev) == nil {
					select {
					case out <- ev:
					default:
					}
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return out
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestHostileWorkflow: names from a workflow document reach the page only
// escaped inside the SVG.
func TestHostileWorkflow(t *testing.T) {
	b := setup(t, setupOptions{})
	b.deployHostile(t)
	var wv workflowView
	_, raw := b.get(t, "/api/workflows/hostile", &wv)
	assertNoMarkup(t, "workflow", raw)
	var d dagView
	b.get(t, "/api/workflows/hostile/dag?state="+url.QueryEscape(wv.WorkStates[0].ID), &d)
	for name, svg := range map[string]string{"chart": wv.Chart, "dag": d.SVG} {
		for _, bad := range []string{"<img", "<script", "<svg onload"} {
			if strings.Contains(svg, bad) {
				t.Errorf("%s SVG holds %q:\n%s", name, bad, svg)
			}
		}
		if !strings.Contains(svg, "&lt;") {
			t.Errorf("%s SVG lost the names:\n%s", name, svg)
		}
	}
}

// TestRunsPaging pages through the run bucket over HTTP with cursors and
// filters.
func TestRunsPaging(t *testing.T) {
	b := setup(t, setupOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const n = 23
	for i := range n {
		if _, err := b.f.Runs.Create(ctx, fmt.Sprintf("run-%06d", i), record(i)); err != nil {
			t.Fatal(err)
		}
	}
	natstest.WaitFor(t, 10*time.Second, "every run indexed", func() error {
		if c := b.c.idx.counts(); c.Total != n {
			return fmt.Errorf("%d runs indexed", c.Total)
		}
		return nil
	})
	for _, c := range []struct {
		query string
		want  int
	}{{"limit=5", n}, {"limit=2&status=done", 5}, {"limit=4&workflow=wf-1", 8}, {"limit=3&q=run-00001", 10}} {
		var ids []string
		path := "/api/runs?" + c.query
		for pages := 0; ; pages++ {
			var p Page
			if status, raw := b.get(t, path, &p); status != 200 || pages > n {
				t.Fatalf("GET %s: %d %s", path, status, raw)
			}
			for _, r := range p.Runs {
				ids = append(ids, r.ID)
			}
			if p.Matched != c.want {
				t.Errorf("%s: matched %d, want %d", c.query, p.Matched, c.want)
			}
			if p.Next == 0 {
				break
			}
			path = fmt.Sprintf("/api/runs?%s&before=%d", c.query, p.Next)
		}
		if len(ids) != c.want || (c.query == "limit=5" && (ids[0] != "run-000022" || ids[n-1] != "run-000000")) {
			t.Errorf("%s: paged %d runs %v, want %d newest first", c.query, len(ids), ids, c.want)
		}
	}
}

// TestOperatorActions: with actions on, the console pauses, resumes and
// terminates a run (a terminate needs a reason), and refuses what the
// run's status does not allow.
func TestOperatorActions(t *testing.T) {
	b := setup(t, setupOptions{actions: true})
	b.startOrder(t, "op-1")
	b.waitStatus(t, "op-1", "waiting")
	var v runView
	b.get(t, "/api/runs/op-1", &v)
	if !strings.HasPrefix(v.Commands.Pause, "jetflow pause op-1") || !strings.HasPrefix(v.Commands.Resume, "jetflow resume op-1") {
		t.Fatalf("pause command %q", v.Commands.Pause)
	}
	if !strings.HasPrefix(v.Commands.Terminate, "jetflow terminate op-1 --reason REASON") {
		t.Fatalf("terminate command %q", v.Commands.Terminate)
	}
	if res := b.post(t, "/api/runs/op-1/resume", `{}`, nil); res.StatusCode != http.StatusConflict {
		t.Fatalf("resume of a waiting run: %d", res.StatusCode)
	}
	if res := b.post(t, "/api/runs/op-1/pause", `{"reason":"check"}`, nil); res.StatusCode != http.StatusAccepted {
		t.Fatalf("pause: %d", res.StatusCode)
	}
	b.waitStatus(t, "op-1", "paused")
	if res := b.post(t, "/api/runs/op-1/pause", `{}`, nil); res.StatusCode != http.StatusConflict {
		t.Fatalf("pause of a paused run: %d", res.StatusCode)
	}
	if res := b.post(t, "/api/runs/op-1/resume", `{}`, nil); res.StatusCode != http.StatusAccepted {
		t.Fatalf("resume: %d", res.StatusCode)
	}
	b.waitStatus(t, "op-1", "waiting")
	if res := b.post(t, "/api/runs/op-1/terminate", `{"reason":"  "}`, nil); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("terminate without a reason: %d", res.StatusCode)
	}
	if res := b.post(t, "/api/runs/op-1/terminate", `{"reason":"test over"}`, nil); res.StatusCode != http.StatusAccepted {
		t.Fatalf("terminate: %d", res.StatusCode)
	}
	b.waitStatus(t, "op-1", "terminated")
	if res := b.post(t, "/api/runs/op-1/pause", `{}`, nil); res.StatusCode != http.StatusConflict {
		t.Fatalf("pause of a terminated run: %d", res.StatusCode)
	}
}
