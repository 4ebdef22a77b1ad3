package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jetflow/jetflow/natstest"
)

// TestBrowserSearchAttributes drives the run list's search box in a real
// headless Chromium: NAME=VALUE words typed into it list only the runs
// whose search attributes match (answered by the run index), the filter
// is kept in the page's address, another value lists other runs, and a
// name that cannot be a search attribute is named in the page.
func TestBrowserSearchAttributes(t *testing.T) {
	b := setup(t, setupOptions{})
	b.startSearchRuns(t)
	// The run index takes the runs in the background: the page is opened
	// once it lists them.
	natstest.WaitFor(t, time.Minute, "the run index to list ann's runs", func() error {
		var pg Page
		if status, raw := b.get(t, "/api/runs?q="+url.QueryEscape("customer=ann"), &pg); status != http.StatusOK || len(pg.Runs) != 2 {
			return fmt.Errorf("%d %s", status, raw)
		}
		return nil
	})
	br := newBrowser(t)
	do, text := br.do, br.text
	row := func(id string) chromedp.CSS { return chromedp.CSS(`#runs tr[data-run="` + id + `"]`) }

	do("open the run list",
		chromedp.Navigate(b.url+"/"),
		chromedp.WaitVisible(row("s-1")), chromedp.WaitVisible(row("s-2")), chromedp.WaitVisible(row("s-3")))
	do("search customer=ann",
		chromedp.SendKeys(chromedp.CSS(`#search`), "customer=ann"),
		chromedp.WaitNotPresent(row("s-2")),
		chromedp.WaitVisible(row("s-1")), chromedp.WaitVisible(row("s-3")))
	if s := text(`#page-info`); !strings.Contains(s, "search attributes match") {
		t.Errorf("page info %q, want it to say the runs come from the run index", s)
	}
	loc, err := chromedp.Run(br.ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(loc, "q="+url.QueryEscape("customer=ann")) {
		t.Errorf("address %q does not keep the filter", loc)
	}
	do("search customer=bob, from a fresh list",
		chromedp.Navigate(b.url+"/"),
		chromedp.WaitVisible(row("s-1")),
		chromedp.SendKeys(chromedp.CSS(`#search`), "customer=bob"),
		chromedp.WaitNotPresent(row("s-1")), chromedp.WaitNotPresent(row("s-3")),
		chromedp.WaitVisible(row("s-2")))
	br.check()
	do("search a name that is no search attribute",
		chromedp.Navigate(b.url+"/"),
		chromedp.WaitVisible(row("s-2")),
		chromedp.SendKeys(chromedp.CSS(`#search`), "a.b=1"),
		chromedp.WaitVisible(chromedp.CSS(`#list-status .error`)))
	if s := text(`#list-status .error`); !strings.Contains(s, `search attribute name "a.b"`) {
		t.Errorf("error shown %q, want it to name a.b", s)
	}
	br.shot("console-runs-search-attributes.png")
	// The refused search is a 400, which the browser logs: expected here,
	// and nothing else.
	br.mu.Lock()
	br.problems = slices.DeleteFunc(br.problems, func(p string) bool { return strings.Contains(p, "status of 400") })
	br.mu.Unlock()
	br.check()
}
