package console

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's headless browser, which .ci/run installs.
const chromiumPath = "/usr/bin/chromium"

// browser is a headless Chromium driving the console, which fails the
// test on any script error or refusal by the content security policy.
type browser struct {
	t         *testing.T
	ctx       context.Context
	artifacts string

	mu       sync.Mutex
	problems []string
}

// newBrowser starts Chromium, or skips the test when there is none.
// Screenshots go to $JETFLOW_ARTIFACTS (or a temporary directory, logged).
func newBrowser(t *testing.T) *browser {
	t.Helper()
	exe := os.Getenv("JETFLOW_CHROMIUM")
	if exe == "" {
		exe = chromiumPath
	}
	if _, err := os.Stat(exe); err != nil {
		t.Skipf("no headless browser at %s (apt-get install -y chromium, or set JETFLOW_CHROMIUM): %v", exe, err)
	}
	artifacts := os.Getenv("JETFLOW_ARTIFACTS")
	if artifacts == "" {
		artifacts = t.TempDir()
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	br := &browser{t: t, ctx: bctx, artifacts: artifacts}
	err := chromedp.Listen(bctx, func(ev any) {
		br.mu.Lock()
		defer br.mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			br.problems = append(br.problems, (&chromedp.ExceptionError{ExceptionDetails: e.ExceptionDetails}).Error())
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError {
				br.problems = append(br.problems, "log: "+e.Entry.Text)
			}
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				br.problems = append(br.problems, fmt.Sprintf("console.error: %v", e.Args))
			}
		}
	})
	if err != nil {
		t.Fatalf("start %s: %v", exe, err)
	}
	return br
}

// shot saves a screenshot under name.
func (br *browser) shot(name string) {
	t := br.t
	t.Helper()
	sctx, cancel := context.WithTimeout(br.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(br.artifacts, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// do runs steps, failing the test (with a screenshot) when they do not
// complete in 15 s.
func (br *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	t := br.t
	t.Helper()
	t.Logf("%s: %s", time.Now().Format("15:04:05.000"), what)
	sctx, cancel := context.WithTimeout(br.ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, steps...); err != nil {
		br.mu.Lock()
		defer br.mu.Unlock()
		br.shot("failed.png")
		t.Fatalf("%s: %v (problems in the page: %q)", what, err, br.problems)
	}
}

// text is the text content of the element sel selects.
func (br *browser) text(sel string) string {
	t := br.t
	t.Helper()
	sctx, cancel := context.WithTimeout(br.ctx, 10*time.Second)
	defer cancel()
	for {
		s, err := chromedp.Run(sctx, chromedp.TextContent(chromedp.CSS(sel)))
		// A page that renders again (a job's progress, polled) can
		// replace the node between its query and the read: ask again.
		if err != nil && strings.Contains(err.Error(), "No node with given id found") && sctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
}

// check fails the test for every problem the page had and for any run
// data that ran as script.
func (br *browser) check() {
	t := br.t
	t.Helper()
	xss, err := chromedp.Run(br.ctx, chromedp.Evaluate[any](`window.__xss`))
	if err != nil {
		t.Fatal(err)
	}
	if xss != nil {
		t.Errorf("run data ran script: window.__xss = %v", xss)
	}
	br.mu.Lock()
	defer br.mu.Unlock()
	for _, p := range br.problems {
		t.Errorf("in the page: %s", p)
	}
}

// TestBrowser drives the console in a real headless Chromium against the
// embedded default: it runs the demo workflow, finds the run in the
// list, opens it, sees the statechart with the active state marked,
// sends the awaited event from the page and sees the run settle without
// reloading. Run data carries markup and script throughout; none of it
// may run.
func TestBrowser(t *testing.T) {
	b := setup(t, setupOptions{actions: true})
	b.startOrder(t, "order-browser-1")
	b.startOrder(t, "order-browser-2")
	br := newBrowser(t)
	do, text, shot := br.do, br.text, br.shot

	do("open the run list",
		chromedp.Navigate(b.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="order-browser-1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="order-browser-2"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#live.on`)))
	if s := text(`#status-filter [data-status="waiting"] .count`); s != "2" {
		t.Errorf("waiting count %q, want 2", s)
	}
	shot("console-runs.png")

	do("search by run id",
		chromedp.SendKeys(chromedp.CSS(`#search`), "browser-2"),
		chromedp.WaitNotPresent(chromedp.CSS(`#runs tr[data-run="order-browser-1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="order-browser-2"]`)))

	do("open the waiting run",
		chromedp.Clear(chromedp.CSS(`#search`)),
		chromedp.Navigate(b.url+"/"),
		chromedp.Click(chromedp.CSS(`#runs tr[data-run="order-browser-1"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`#chart svg g.jf-active[data-id="/states/await-payment"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#chart svg g.jf-visited[data-id="/states/check"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li.k-result`)),
		chromedp.WaitVisible(chromedp.CSS(`#replay [data-verdict="equal"]`)))
	if s := text(`#run-status`); s != "waiting" {
		t.Errorf("run status %q, want waiting", s)
	}
	// Markup in the run's input is shown as text.
	if s := text(`#input pre`); !strings.Contains(s, `<img src=x onerror=`) {
		t.Errorf("input shown as %q, want the markup as text", s)
	}
	do("open the DAG of the check state",
		chromedp.Click(chromedp.CSS(`#work-states [data-state="/states/check"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#dag svg g.jf-done[data-id="stock"]`)))
	shot("console-run-waiting.png")

	do("send the payment from the page",
		chromedp.SendKeys(chromedp.CSS(`#event-payload`), `{"amount": 30, "note": "<b onmouseover=alert(1)>paid</b>"}`),
		chromedp.WaitVisible(chromedp.CSS(`#event-cmd`)))
	if cmd := text(`#event-cmd`); !strings.HasPrefix(cmd, "jetflow event order-browser-1 payment --payload '{") {
		t.Errorf("event command %q", cmd)
	}
	do("see the run settle",
		chromedp.Click(chromedp.CSS(`#send-event`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-status .st-done`)),
		chromedp.WaitVisible(chromedp.CSS(`#chart svg g.jf-active[data-id="/states/done"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#result pre`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li.k-event`)))
	shot("console-run-done.png")

	do("open the workflows",
		chromedp.Click(chromedp.CSS(`a[data-nav="workflows"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#workflows tr[data-workflow="order"]`)),
		chromedp.Click(chromedp.CSS(`#workflows tr[data-workflow="order"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`#chart svg`)),
		chromedp.WaitVisible(chromedp.CSS(`#dag svg`)))
	shot("console-workflow.png")

	// A workflow whose names are markup is drawn with the names as text.
	b.deployHostile(t)
	do("open a workflow named with markup",
		chromedp.Navigate(b.url+"/workflows/hostile"),
		chromedp.WaitVisible(chromedp.CSS(`#chart svg g.jf-work`)),
		chromedp.WaitVisible(chromedp.CSS(`#dag svg g.jf-task`)))
	if s := text(`#dag svg g.jf-task text.jf-label`); s != `<svg onload="window.__xss=5">` {
		t.Errorf("DAG node label shown as %q", s)
	}

	br.check()
}
