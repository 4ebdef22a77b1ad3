package console

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/schedule"
)

// TestBrowserScheduleActions drives the schedules page in Chromium: it
// creates a schedule from the form, updates its times from the same form,
// pauses, resumes, triggers and deletes it, each after a confirmation
// showing the jetflow schedule command; the schedule is read from the
// stream, not from the page, and the page shows its next fires.
func TestBrowserScheduleActions(t *testing.T) {
	b := setup(t, setupOptions{actions: true})
	ctx := t.Context()
	store, err := schedule.Open(ctx, b.f.JS, b.f.Names)
	if err != nil {
		t.Fatal(err)
	}
	waitDef := func(what string, ok func(*schedule.Info, error) bool) {
		t.Helper()
		natstest.WaitFor(t, time.Minute, what, func() error {
			info, err := store.Get(ctx, "browsed")
			if !ok(info, err) {
				return fmt.Errorf("%+v: %w", info, err)
			}
			return nil
		})
	}
	br := newBrowser(t)
	do, text := br.do, br.text
	row := `#schedules tr[data-schedule="browsed"]`

	do("fill the new schedule form and ask to create it",
		chromedp.Navigate(b.url+"/schedules"),
		chromedp.WaitVisible(chromedp.CSS(`#sf-submit`)),
		chromedp.SendKeys(chromedp.CSS(`#sf-name`), "browsed"),
		chromedp.SendKeys(chromedp.CSS(`#sf-workflow`), "order"),
		chromedp.SendKeys(chromedp.CSS(`#sf-when`), "0 3 * * *"),
		chromedp.SendKeys(chromedp.CSS(`#sf-input`), `{"items": []}`),
		chromedp.Click(chromedp.CSS(`#sf-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-cmd`)))
	if cmd := text(`#confirm-cmd`); !strings.HasPrefix(cmd, `jetflow schedule create browsed --workflow order --cron '0 3 * * *' --input '{"items":[]}' --overlap skip --catch-up one --nats `) {
		t.Errorf("create command %q", cmd)
	}
	do("confirm the create and see the schedule with its next fires",
		chromedp.Click(chromedp.CSS(`#confirm-yes`)),
		chromedp.WaitVisible(chromedp.CSS(row+` .sched-pause`)))
	waitDef("the created schedule", func(i *schedule.Info, err error) bool {
		return err == nil && i.Def.Cron == "0 3 * * *" && string(i.Def.Input) == `{"items":[]}` && i.Def.Workflow == "order"
	})
	if next := text(row + ` .next-fires`); strings.Count(next, "T03:00:00.000Z") != 3 {
		t.Errorf("next fires %q, want three at 03:00", next)
	}

	do("edit its times and ask to update it",
		chromedp.Click(chromedp.CSS(row+` .sched-edit`)),
		chromedp.WaitVisible(chromedp.CSS(`#sf-new`)),
		chromedp.SetValue(chromedp.CSS(`#sf-when`), "30 4 * * *"),
		chromedp.Click(chromedp.CSS(`#sf-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-cmd`)))
	if cmd := text(`#confirm-cmd`); !strings.HasPrefix(cmd, `jetflow schedule update browsed --cron '30 4 * * *' --nats `) {
		t.Errorf("update command %q: want only the times changed", cmd)
	}
	do("confirm the update",
		chromedp.Click(chromedp.CSS(`#confirm-yes`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#confirm-cmd`)))
	waitDef("the updated times", func(i *schedule.Info, err error) bool {
		return err == nil && i.Def.Cron == "30 4 * * *" && string(i.Def.Input) == `{"items":[]}`
	})
	br.shot("console-schedules.png")

	for _, step := range []struct{ verb, cmd string }{{"pause", "jetflow schedule pause browsed"}, {"resume", "jetflow schedule resume browsed"}} {
		do("ask to "+step.verb+" it",
			chromedp.WaitVisible(chromedp.CSS(row+` .sched-`+step.verb)),
			chromedp.Click(chromedp.CSS(row+` .sched-`+step.verb)),
			chromedp.WaitVisible(chromedp.CSS(`#confirm-cmd`)))
		if cmd := text(`#confirm-cmd`); !strings.HasPrefix(cmd, step.cmd+" --nats ") {
			t.Errorf("%s command %q", step.verb, cmd)
		}
		do("confirm the "+step.verb, chromedp.Click(chromedp.CSS(`#confirm-yes`)), chromedp.WaitNotPresent(chromedp.CSS(`#confirm-cmd`)))
		paused := step.verb == "pause"
		waitDef("the schedule "+step.verb+"d", func(i *schedule.Info, err error) bool { return err == nil && i.Def.Paused == paused })
	}

	do("ask to trigger it",
		chromedp.WaitVisible(chromedp.CSS(row+` .sched-pause`)),
		chromedp.Click(chromedp.CSS(row+` .sched-trigger`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-cmd`)))
	if cmd := text(`#confirm-cmd`); !strings.HasPrefix(cmd, "jetflow schedule trigger browsed --nats ") {
		t.Errorf("trigger command %q", cmd)
	}
	do("confirm the trigger", chromedp.Click(chromedp.CSS(`#confirm-yes`)), chromedp.WaitNotPresent(chromedp.CSS(`#confirm-cmd`)))
	natstest.WaitFor(t, time.Minute, "the triggered run's id in the page", func() error {
		if r := text(`#action-result`); !strings.HasPrefix(r, "Run browsed-manual-") {
			return errors.New(r)
		}
		return nil
	})
	runID := strings.TrimSuffix(strings.TrimPrefix(text(`#action-result`), "Run "), " started.")
	natstest.WaitFor(t, 2*time.Minute, "the triggered run "+runID, func() error {
		_, err := b.f.Client.Status(ctx, runID)
		return err
	})

	do("ask to delete it",
		chromedp.Click(chromedp.CSS(row+` .sched-delete`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-cmd`)))
	if cmd := text(`#confirm-cmd`); !strings.HasPrefix(cmd, "jetflow schedule delete browsed --nats ") {
		t.Errorf("delete command %q", cmd)
	}
	do("confirm the delete and see the row go",
		chromedp.Click(chromedp.CSS(`#confirm-yes`)),
		chromedp.WaitNotPresent(chromedp.CSS(row)))
	waitDef("the schedule deleted", func(_ *schedule.Info, err error) bool { return errors.Is(err, schedule.ErrNotFound) })
	br.check()
}
