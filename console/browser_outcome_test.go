package console

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// labelProblems checks, in the page as drawn, every edge label of the
// diagrams: shown whole (wrapped, each merged branch on a line of its
// own), inside its drawing, and crossed by no edge.
const labelProblems = `(() => {
  const out = [];
  for (const svg of document.querySelectorAll('#chart svg, #dag svg')) {
    const frame = svg.getBoundingClientRect();
    const labels = [...svg.querySelectorAll('text.jf-edge-label')].map(t => ({
      whole: t.querySelector('title').textContent,
      shown: [...t.querySelectorAll('tspan')].map(s => s.textContent).join(''),
      box: t.getBoundingClientRect(),
    }));
    for (const l of labels) {
      if (l.shown !== l.whole.split(' | ').join('') || l.whole.includes('…')) out.push('label ' + JSON.stringify(l.whole) + ' shown as ' + JSON.stringify(l.shown));
      if (l.box.left < frame.left || l.box.right > frame.right || l.box.top < frame.top || l.box.bottom > frame.bottom) {
        out.push('label ' + JSON.stringify(l.whole) + ' reaches outside its drawing');
      }
    }
    for (const p of svg.querySelectorAll('path.jf-edge')) {
      const m = p.getScreenCTM(), len = p.getTotalLength();
      for (const l of labels) {
        for (let at = 0; at <= len; at += 1) {
          const q = new DOMPoint(p.getPointAtLength(at).x, p.getPointAtLength(at).y).matrixTransform(m);
          if (q.x > l.box.left + 1 && q.x < l.box.right - 1 && q.y > l.box.top + 1 && q.y < l.box.bottom - 1) {
            out.push('an edge (' + p.getAttribute('class') + ') runs across the label ' + JSON.stringify(l.whole));
            break;
          }
        }
      }
    }
  }
  return out;
})()`

// TestBrowserOutcomes checks in Chromium how the console shows where
// runs ended: the workflow page is live and draws every guard label
// whole, clear of the edges (the catch edge included); a failed run has
// no work in flight and no DAG node waiting; a run done through its
// catch is marked as such, with the caught error. Screenshots of each
// are kept in the artifacts.
func TestBrowserOutcomes(t *testing.T) {
	b := setup(t, setupOptions{})
	b.serveOutcomes(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, r := range [][2]string{{"fails", "outcome-failed"}, {"catches", "outcome-caught"}} {
		if err := b.f.Client.StartRun(ctx, r[0], r[1], map[string]any{"note": hostile}); err != nil {
			t.Fatal(err)
		}
	}
	b.waitStatus(t, "outcome-failed", "failed")
	b.waitStatus(t, "outcome-caught", "done")
	br := newBrowser(t)
	do, text := br.do, br.text

	do("open the order workflow",
		chromedp.Navigate(b.url+"/workflows/order"),
		chromedp.WaitVisible(chromedp.CSS(`#chart svg g[data-id="/states/decide"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#dag svg g[data-id="verdict"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#live.on`)))
	if s := text(`#live`); s != "live" {
		t.Errorf("live badge %q on the workflow page, want live", s)
	}
	problems, err := chromedp.Run(br.ctx, chromedp.Evaluate[[]string](labelProblems))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("workflow order: %s", p)
	}
	guards, err := chromedp.Run(br.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#chart svg text.jf-edge-label tspan')].map(s => s.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`{"$not":"$.context.data.inStock"}`, `{"$gt":["$.context.data.risk",0.8]}`} {
		if !slices.Contains(guards, want) {
			t.Errorf("no label line %s among %q", want, guards)
		}
	}
	br.shot("console-workflow-labels.png")
	br.shotOf(`#chart svg`, "console-graph-labels.png")

	do("open the failed run",
		chromedp.Navigate(b.url+"/runs/outcome-failed"),
		chromedp.WaitVisible(chromedp.CSS(`#run-status .st-failed`)),
		chromedp.WaitVisible(chromedp.CSS(`#dag svg g.jf-failed[data-id="boom"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#dag svg g.jf-done[data-id="fine"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#failure`)))
	left, err := chromedp.Run(br.ctx, chromedp.Evaluate[[]string](`[
	  ...[...document.querySelectorAll('#pending, #dag svg g.jf-waiting, #dag svg g.jf-invoked, #dag svg g.jf-retrying')].map(e => e.id || e.getAttribute('class') + ' ' + e.dataset.id),
	  ...[...document.querySelectorAll('#dag-table .badge')].filter(b => !['done', 'failed'].includes(b.textContent)).map(b => 'table: ' + b.textContent)]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("the failed run shows work in flight: %q", left)
	}
	if s := text(`#dag-table tr[data-node="fine"] .badge`); s != "done" {
		t.Errorf("node fine %q, want done", s)
	}
	br.shot("console-run-failed.png")

	do("open the run done through its catch",
		chromedp.Navigate(b.url+"/runs/outcome-caught"),
		chromedp.WaitVisible(chromedp.CSS(`#run-status .badge.caught`)),
		chromedp.WaitVisible(chromedp.CSS(`#caught`)),
		chromedp.WaitVisible(chromedp.CSS(`#chart svg g.jf-active[data-id="/states/rejected"]`)))
	if s := text(`#run-status`); s != "done · caught JF2006" {
		t.Errorf("caught run's badge %q", s)
	}
	title, err := chromedp.Run(br.ctx, chromedp.Evaluate[string](`document.querySelector('#run-status .badge').title`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(title, "caught in work: JF2006: node 'boom' failed: the boom service is down") {
		t.Errorf("caught run's badge title %q", title)
	}
	if s := text(`#caught`); !strings.Contains(s, "boom (boom@1)") || !strings.Contains(s, "the boom service is down "+hostile) {
		t.Errorf("caught error panel %q", s)
	}
	do("see the caught error on the failed node",
		chromedp.Click(chromedp.CSS(`#work-states [data-state="/states/work"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#dag svg g.jf-failed[data-id="boom"]`)))
	br.shot("console-run-caught.png")

	do("see both outcomes in the run list",
		chromedp.Navigate(b.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="outcome-caught"] .badge.caught`)),
		chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="outcome-failed"] .st-failed`)))
	br.shot("console-runs-outcomes.png")
	br.check()
}

// shotOf saves a screenshot of the element sel selects, at twice the
// page's scale so that its text can be read.
func (br *browser) shotOf(sel, name string) {
	t := br.t
	t.Helper()
	sctx, cancel := context.WithTimeout(br.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.ScreenshotScale(chromedp.CSS(sel), 2))
	if err != nil {
		t.Fatalf("screenshot %s of %s: %v", name, sel, err)
	}
	path := filepath.Join(br.artifacts, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}
