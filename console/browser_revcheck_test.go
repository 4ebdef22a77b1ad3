package console

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jetflow/jetflow/natstest"
)

// TestBrowserCheckRevision opens the workflow's check in Chromium, checks
// order-2 and sees the settled run named as diverging and the waiting
// ones as the same, then migrates the runs that are the same as a bulk
// job, after a confirmation showing the `jetflow migrate` command, and
// follows the job to its end. The runs' revisions are read from the run
// bucket, not from the page.
func TestBrowserCheckRevision(t *testing.T) {
	b := setup(t, setupOptions{actions: true})
	b.revisionRuns(t)
	br := newBrowser(t)
	do, text := br.do, br.text

	do("open the workflow's page and check revision order-2",
		chromedp.Navigate(b.url+"/workflows/order"),
		chromedp.WaitVisible(chromedp.CSS(`#check-run`)),
		chromedp.SetValue(chromedp.CSS(`#check-revision`), "order-2"),
		chromedp.Click(chromedp.CSS(`#check-run`)),
		chromedp.WaitVisible(chromedp.CSS(`#check-summary`)))
	if s := text(`#check-summary`); !strings.HasPrefix(s, "checked 3 runs of order against revision order-2") || !strings.HasSuffix(s, "2 same (2 waiting or running may move), 1 diverge, 0 fail") {
		t.Errorf("summary %q", s)
	}
	diverging := `#check-runs tr[data-run="o-paid"][data-verdict="diverges"]`
	do("see the paid order named as diverging, and the waiting ones the same",
		chromedp.WaitVisible(chromedp.CSS(diverging)),
		chromedp.WaitVisible(chromedp.CSS(`#check-runs tr[data-run="o-wait-1"][data-verdict="same"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#check-runs tr[data-run="o-wait-2"][data-verdict="same"]`)))
	if s := text(diverging + ` .check-text`); !strings.HasPrefix(s, "diverges at input ") {
		t.Errorf("the diverging run's detail %q", s)
	}
	if s := text(diverging + ` a`); s != "o-paid" {
		t.Errorf("the diverging run's link %q", s)
	}
	br.shot("console-check-revision.png")

	do("ask to migrate the runs that are the same",
		chromedp.Click(chromedp.CSS(`#check-migrate`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-cmd`)))
	if cmd := text(`#confirm-cmd`); !strings.HasPrefix(cmd, "jetflow migrate --to order-2 --workflow order --run o-wait-1,o-wait-2 --yes --nats ") {
		t.Errorf("migrate command %q", cmd)
	}
	do("submit the job and follow it to its end",
		chromedp.Click(chromedp.CSS(`#confirm-yes`)),
		chromedp.WaitVisible(chromedp.CSS(`#job-state`)))
	// The job checks each run's history: give it minutes on a loaded machine.
	wctx, cancel := context.WithTimeout(br.ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(wctx, chromedp.WaitVisible(chromedp.CSS(`#job-state .st-done`))); err != nil {
		br.shot("failed.png")
		t.Fatalf("the migrate job's end on its page: %v", err)
	}
	br.shot("console-migrate-job.png")
	// The page is redrawn at each change of the job: read it once it ended.
	if cmd := text(`#job-cmd`); !strings.HasPrefix(cmd, "jetflow migrate --to order-2 --workflow order --run o-wait-1,o-wait-2 --yes") {
		t.Errorf("job command %q", cmd)
	}
	if to := text(`#job-to`); to != "order-2" {
		t.Errorf("job's revision %q", to)
	}
	for _, id := range []string{"o-wait-1", "o-wait-2"} {
		natstest.WaitFor(t, 2*time.Minute, id+" on order-2", func() error {
			st, err := b.f.Client.Status(context.Background(), id)
			if err == nil && st.Revision != "order-2" {
				return fmt.Errorf("%s is on %s", id, st.Revision)
			}
			return err
		})
	}
	if st, err := b.f.Client.Status(context.Background(), "o-paid"); err != nil || st.Revision != "order-1" {
		t.Errorf("the settled run: %+v %v", st, err)
	}

	// The runs page's bulk panel offers migrate over the list's filter,
	// with the revision to move to.
	do("count the waiting runs of order for a bulk migrate to order-1b",
		chromedp.Navigate(b.url+"/?status=waiting&workflow=order"),
		chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="o-wait-1"]`)),
		chromedp.Click(chromedp.CSS(`#bulk summary`)),
		chromedp.SetValue(chromedp.CSS(`#bulk-op`), "migrate"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('bulk-op').dispatchEvent(new Event('change'))`),
		chromedp.WaitVisible(chromedp.CSS(`#bulk-to`)),
		chromedp.SendKeys(chromedp.CSS(`#bulk-to`), "order-1b"),
		chromedp.Click(chromedp.CSS(`#bulk-count`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-cmd`)))
	if s := text(`#bulk-counted`); !strings.HasPrefix(s, "2 runs match; 2 can take a migrate") {
		t.Errorf("count %q", s)
	}
	if cmd := text(`#confirm-cmd`); !strings.HasPrefix(cmd, "jetflow migrate --to order-1b --workflow order --status waiting --yes --nats ") {
		t.Errorf("bulk migrate command %q", cmd)
	}
	br.check()
}
