package console

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/policy"
)

// startSearchRuns deploys "sorder", the order example with the search
// attribute customer (the run's input's), and starts three runs of it,
// s-1 and s-3 for ann and s-2 for bob, waiting for their payment.
func (b *bundle) startSearchRuns(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	doc, err := os.ReadFile(filepath.Join("..", "examples", "order.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse([]byte(`{"$run": {"search": {"customer": "/input/customer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.f.DeployWith(ctx, "sorder", doc, fleet.DeployOptions{Policy: p}); err != nil {
		t.Fatal(err)
	}
	for id, customer := range map[string]string{"s-1": "ann", "s-2": "bob", "s-3": "ann"} {
		if err := b.f.Client.StartRun(ctx, "sorder", id, map[string]any{"sku": "KB-42", "qty": 1, "customer": customer}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"s-1", "s-2", "s-3"} {
		b.waitStatus(t, id, "waiting")
	}
}

// TestRunsWhere: NAME=VALUE words in the run list's search box filter by
// search attributes through the run index (with the status and workflow
// filters, paged by the index's cursor), a bad name is refused, and a
// bulk count of such a filter counts the same runs and shows --where.
func TestRunsWhere(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{actions: true, jobsOff: true})
	b.startSearchRuns(t)
	ids := func(p Page) []string {
		var out []string
		for _, r := range p.Runs {
			out = append(out, r.ID)
		}
		slices.Sort(out)
		return out
	}

	var pg Page
	if status, raw := b.get(t, "/api/runs?q="+url.QueryEscape("customer=ann"), &pg); status != http.StatusOK {
		t.Fatalf("q=customer=ann: %d %s", status, raw)
	}
	if got := ids(pg); !slices.Equal(got, []string{"s-1", "s-3"}) || pg.Matched != -1 {
		t.Errorf("q=customer=ann: runs %v, matched %d; want s-1 s-3 and -1 (not counted)", got, pg.Matched)
	}
	if b.get(t, "/api/runs?status=done&q="+url.QueryEscape("customer=ann"), &pg); len(pg.Runs) != 0 {
		t.Errorf("done runs of ann: %v, want none", ids(pg))
	}
	// Pages of one run, by the index's cursor.
	var seen []string
	cursor := ""
	for range 3 {
		path := "/api/runs?limit=1&workflow=sorder&q=" + url.QueryEscape("customer=ann")
		if cursor != "" {
			path += "&before=" + url.QueryEscape(cursor)
		}
		var page Page
		if status, raw := b.get(t, path, &page); status != http.StatusOK || len(page.Runs) != 1 {
			t.Fatalf("%s: %d %s", path, status, raw)
		}
		seen = append(seen, page.Runs[0].ID)
		if cursor = page.Cursor; cursor == "" {
			break
		}
	}
	slices.Sort(seen)
	if !slices.Equal(seen, []string{"s-1", "s-3"}) {
		t.Errorf("pages of one run: %v, want s-1 then s-3 in some order", seen)
	}
	var e apiError
	if status, _ := b.get(t, "/api/runs?q="+url.QueryEscape("a.b=1"), &e); status != http.StatusBadRequest || !strings.Contains(e.Error, `search attribute name "a.b"`) {
		t.Errorf("a bad name: %d %q, want 400 naming it", status, e.Error)
	}

	var n bulkCountView
	if status := b.postJSON(t, "/api/bulk/count", `{"operation":"cancel","filter":{"workflow":"sorder","where":{"customer":"ann"}}}`, &n); status != http.StatusOK {
		t.Fatalf("count: %d %+v", status, n)
	}
	if n.Matched != 2 || n.Eligible != 2 || !strings.Contains(n.Command, "--where customer=ann") {
		t.Errorf("count of customer=ann: matched %d, eligible %d, command %q; want 2, 2 and --where", n.Matched, n.Eligible, n.Command)
	}
}
