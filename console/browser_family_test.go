package console

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/policy"
)

// TestBrowserFamily checks in Chromium the run page's Parent and
// children panel: a parent lists its child with its status, a link to
// it; the child's page links back to its parent.
func TestBrowserFamily(t *testing.T) {
	b := setup(t, setupOptions{})
	b.serveOutcomes(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := b.f.Deploy(ctx, "kid", []byte(`{"$workflow":"0.2","revision":"kid/1","initial":"a","states":{
		"a":{"work":{"task":"fine","version":"1"},"then":"done"},"done":{"final":true}}}`)); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse([]byte(`{"$children":{"sub@1":{"workflow":"kid"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.f.DeployWith(ctx, "mother", []byte(`{"$workflow":"0.2","revision":"mother/1","initial":"a","states":{
		"a":{"work":{"task":"sub","version":"1"},"then":"done"},"done":{"final":true}}}`), fleet.DeployOptions{Policy: p}); err != nil {
		t.Fatal(err)
	}
	if err := b.f.Client.StartRun(ctx, "mother", "fam", nil); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(t, "fam", "done")
	rec, err := b.f.Client.Record(ctx, "fam")
	if err != nil || len(rec.Children) != 1 {
		t.Fatalf("record of fam: %v, children %+v", err, rec)
	}
	kid := rec.Children[0].Run
	br := newBrowser(t)
	do, text := br.do, br.text

	do("open the parent",
		chromedp.Navigate(b.url+"/runs/fam"),
		chromedp.WaitVisible(chromedp.CSS(`#family li a`)))
	if s := text(`#family`); !strings.Contains(s, "Parent and children") || !strings.Contains(s, kid) || !strings.Contains(s, "done") ||
		!strings.Contains(s, "kid, node") {
		t.Errorf("the parent's panel reads %q, want its child %s, done, of workflow kid", s, kid)
	}
	do("follow the link to the child",
		chromedp.Click(chromedp.CSS(`#family li a`)),
		chromedp.WaitVisible(chromedp.CSS(`#family p a`)))
	if s := text(`#family`); !strings.Contains(s, "Child of fam") || !strings.Contains(s, "sub@1 attempt 1") {
		t.Errorf("the child's panel reads %q, want a link to its parent fam", s)
	}
	do("follow the link back to the parent",
		chromedp.Click(chromedp.CSS(`#family p a`)),
		chromedp.WaitVisible(chromedp.CSS(`#family li a`)))
	br.shot("run-family")
}
