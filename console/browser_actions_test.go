package console

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jetflow/jetflow/wire"
)

// TestBrowserActions drives the console's actions in Chromium: it pauses
// a run and resumes it, each after a confirmation showing the command,
// then cancels the waiting runs of a workflow with a bulk job submitted
// from the runs page's filter, follows the job to its end, and redrives a
// failed run. The runs' statuses are read from the run bucket, not from
// the page.
func TestBrowserActions(t *testing.T) {
	b := setup(t, setupOptions{actions: true})
	for _, id := range []string{"act-1", "bulk-a", "keep-1"} {
		b.startOrder(t, id)
	}
	br := newBrowser(t)
	do, text := br.do, br.text
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	do("open a waiting run and ask to pause it",
		chromedp.Navigate(b.url+"/runs/act-1"),
		chromedp.WaitVisible(chromedp.CSS(`#run-status .st-waiting`)),
		chromedp.SendKeys(chromedp.CSS(`#operator-reason`), "browser check"),
		chromedp.Click(chromedp.CSS(`#pause-run`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-cmd`)))
	if cmd := text(`#confirm-cmd`); !strings.HasPrefix(cmd, "jetflow pause act-1 --reason 'browser check' --nats ") {
		t.Errorf("pause command %q", cmd)
	}
	do("confirm the pause",
		chromedp.Click(chromedp.CSS(`#confirm-yes`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-status .st-paused`)),
		chromedp.WaitVisible(chromedp.CSS(`#resume-run`)))
	b.waitStatus(t, "act-1", "paused")
	br.shot("console-run-paused.png")
	do("resume it",
		chromedp.Click(chromedp.CSS(`#resume-run`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-cmd`)))
	if cmd := text(`#confirm-cmd`); !strings.HasPrefix(cmd, "jetflow resume act-1") {
		t.Errorf("resume command %q", cmd)
	}
	do("confirm the resume",
		chromedp.Click(chromedp.CSS(`#confirm-yes`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-status .st-waiting`)),
		chromedp.WaitVisible(chromedp.CSS(`#pause-run`)))
	b.waitStatus(t, "act-1", "waiting")
	// A live update that leaves the run's status as it was keeps what is
	// typed in the actions panel.
	do("type a cancel reason",
		chromedp.SendKeys(chromedp.CSS(`#cancel-reason`), "typed before an update"))
	if err := b.f.Client.SendEvent(ctx, "act-1", "unrelated", nil); err != nil {
		t.Fatal(err)
	}
	do("see the unrelated event in the history",
		chromedp.WaitVisible(chromedp.CSS(`#timeline li.k-event`)))
	typed, err := chromedp.Run(br.ctx, chromedp.Value(chromedp.CSS(`#cancel-reason`)))
	if err != nil {
		t.Fatal(err)
	}
	if typed != "typed before an update" {
		t.Errorf("cancel reason after a live update %q", typed)
	}
	do("see the reset command of the run's start in the history",
		chromedp.WaitReady(chromedp.CSS(`#timeline li.k-start code[id^="reset-cmd-"]`)))
	if cmd := text(`#timeline li.k-start code[id^="reset-cmd-"]`); !strings.HasPrefix(cmd, "jetflow reset act-1 --to ") {
		t.Errorf("reset command %q", cmd)
	}
	do("ask to reset act-1 to its start, in the page",
		chromedp.Click(chromedp.CSS(`#timeline li.k-start .entry-head`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li.k-start button.reset-here`)),
		chromedp.Click(chromedp.CSS(`#timeline li.k-start button.reset-here`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li.k-start #confirm-cmd`)))
	if cmd := text(`#timeline li.k-start #confirm-cmd`); !strings.HasPrefix(cmd, "jetflow reset act-1 --to ") {
		t.Errorf("reset confirmation command %q", cmd)
	}
	do("go back without resetting",
		chromedp.Click(chromedp.CSS(`#timeline li.k-start #confirm-no`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#timeline li.k-start #confirm-cmd`)))

	// keep-1 is paused, so the filter (waiting runs of order) leaves it.
	if err := b.f.Client.Pause(ctx, "keep-1", "kept out of the bulk job", "test"); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(t, "keep-1", "paused")

	do("count the waiting runs of order for a bulk cancel",
		chromedp.Navigate(b.url+"/?status=waiting&workflow=order"),
		chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="bulk-a"]`)),
		chromedp.Click(chromedp.CSS(`#bulk summary`)),
		chromedp.SendKeys(chromedp.CSS(`#bulk-reason`), "browser bulk"),
		chromedp.Click(chromedp.CSS(`#bulk-count`)),
		chromedp.WaitVisible(chromedp.CSS(`#bulk-counted`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-cmd`)))
	if s := text(`#bulk-counted`); !strings.HasPrefix(s, "2 runs match; 2 can take a cancel") {
		t.Errorf("count %q, want 2 runs", s)
	}
	if cmd := text(`#confirm-cmd`); !strings.HasPrefix(cmd, "jetflow cancel --workflow order --status waiting --reason 'browser bulk' --yes --nats ") {
		t.Errorf("bulk command %q", cmd)
	}
	br.shot("console-bulk-confirm.png")
	do("submit the job and follow it to its end",
		chromedp.Click(chromedp.CSS(`#confirm-yes`)),
		chromedp.WaitVisible(chromedp.CSS(`#job-state`)),
		chromedp.WaitVisible(chromedp.CSS(`#job-state .st-done`)))
	if s := text(`#job-sent`); s != "2" {
		t.Errorf("job sent %q, want 2", s)
	}
	if cmd := text(`#job-cmd`); !strings.HasPrefix(cmd, "jetflow cancel --workflow order --status waiting") {
		t.Errorf("job command %q", cmd)
	}
	br.shot("console-job-done.png")
	for _, id := range []string{"act-1", "bulk-a"} {
		b.waitStatus(t, id, "cancelled")
	}
	if st, err := b.f.Client.Status(ctx, "keep-1"); err != nil || st.Status != "paused" {
		t.Errorf("run keep-1, outside the filter: %v %v", st, err)
	}
	do("see the job in the job list",
		chromedp.Click(chromedp.CSS(`a[data-nav="jobs"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-state="done"]`)))

	// A failed run is redriven onto the latest revision once its task
	// works again.
	fixed := b.serveFlaky(t)
	if err := b.f.Client.StartRun(ctx, "flaky", "rd-browser", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(t, "rd-browser", "failed")
	fixed.Store(true)
	do("ask to redrive the failed run onto the latest revision",
		chromedp.Navigate(b.url+"/runs/rd-browser"),
		chromedp.WaitVisible(chromedp.CSS(`#run-status .st-failed`)),
		chromedp.Click(chromedp.CSS(`#redrive-latest`)),
		chromedp.Click(chromedp.CSS(`#redrive-run`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-cmd`)))
	if cmd := text(`#confirm-cmd`); !strings.HasPrefix(cmd, "jetflow redrive rd-browser --to-revision latest --nats ") {
		t.Errorf("redrive command %q", cmd)
	}
	do("confirm the redrive and see the run finish",
		chromedp.Click(chromedp.CSS(`#confirm-yes`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-status .st-done`)))
	b.waitStatus(t, "rd-browser", "done")
	br.check()
}

// TestBrowserJobCancel cancels a bulk job from the jobs page, in
// Chromium: no dispatcher takes jobs here, so the job is pending until
// the page cancels it, after a confirmation showing the command.
func TestBrowserJobCancel(t *testing.T) {
	b := setup(t, setupOptions{actions: true, jobsOff: true})
	b.startOrder(t, "jc-1")
	var j jobJSON
	if status := b.postJSON(t, "/api/jobs", `{"operation":"terminate","reason":"never","filter":{"workflow":"order"}}`, &j); status != http.StatusCreated {
		t.Fatalf("submit: %d %+v", status, j)
	}
	br := newBrowser(t)
	row := `#jobs tr[data-job="` + j.ID + `"]`
	br.do("open the jobs page and ask to cancel the pending job",
		chromedp.Navigate(b.url+"/jobs"),
		chromedp.WaitVisible(chromedp.CSS(row+`[data-state="pending"]`)),
		chromedp.Click(chromedp.CSS(row+` button.cancel-job`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-cmd`)))
	if cmd := br.text(`#confirm-cmd`); !strings.HasPrefix(cmd, "jetflow jobs cancel "+j.ID+" --nats ") {
		t.Errorf("cancel command %q", cmd)
	}
	br.do("confirm and see the job cancelled",
		chromedp.Click(chromedp.CSS(`#confirm-yes`)),
		chromedp.WaitVisible(chromedp.CSS(row+`[data-state="cancelled"]`)))
	got, _, err := b.f.Client.Job(context.Background(), j.ID, true)
	if err != nil || got.State != wire.JobCancelled {
		t.Errorf("job %s after the page cancelled it: %+v %v", j.ID, got, err)
	}
	if st, err := b.f.Client.Status(context.Background(), "jc-1"); err != nil || st.Status != "waiting" {
		t.Errorf("run jc-1: %v %v", st, err)
	}
	br.check()
}

// TestBrowserTerminate terminates a waiting run from its page in
// Chromium: the page refuses without a reason, then asks with the
// command; the run's status is read from the run bucket.
func TestBrowserTerminate(t *testing.T) {
	b := setup(t, setupOptions{actions: true})
	b.startOrder(t, "term-1")
	br := newBrowser(t)
	do, text := br.do, br.text
	do("ask to terminate without a reason",
		chromedp.Navigate(b.url+"/runs/term-1"),
		chromedp.WaitVisible(chromedp.CSS(`#run-status .st-waiting`)),
		chromedp.Click(chromedp.CSS(`#terminate-run`)),
		chromedp.WaitVisible(chromedp.CSS(`#action-result`)))
	if r := text(`#action-result`); r != "Say why the run is terminated." {
		t.Errorf("terminate without a reason: %q", r)
	}
	do("give a reason and ask again",
		chromedp.SendKeys(chromedp.CSS(`#operator-reason`), "browser end"),
		chromedp.Click(chromedp.CSS(`#terminate-run`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-cmd`)))
	if cmd := text(`#confirm-cmd`); !strings.HasPrefix(cmd, "jetflow terminate term-1 --reason 'browser end' --nats ") {
		t.Errorf("terminate command %q", cmd)
	}
	do("confirm the terminate",
		chromedp.Click(chromedp.CSS(`#confirm-yes`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-status .st-terminated`)))
	b.waitStatus(t, "term-1", "terminated")
	br.check()
}
