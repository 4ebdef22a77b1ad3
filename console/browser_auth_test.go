package console

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserLoginAndAudit signs in through the login form of a console
// with basic auth, pauses a run from its page, and finds the pause on the
// Audit page under the signed-in user, newest first.
func TestBrowserLoginAndAudit(t *testing.T) {
	b := setup(t, setupOptions{actions: true})
	b.startOrder(t, "aud-1")
	cred, err := ParseBasic("ana:s3cret")
	if err != nil {
		t.Fatal(err)
	}
	f := b.front(t, Config{Actions: true, Auth: Auth{Basic: cred}, NATSURL: b.f.URL()})
	br := newBrowser(t)
	do, text := br.do, br.text

	do("open a run page without a session: the login form",
		chromedp.Navigate(f.url+"/runs/aud-1"),
		chromedp.WaitVisible(chromedp.CSS(`#login-basic`)))
	br.shot("console-login.png")
	do("a wrong password is refused",
		chromedp.SendKeys(chromedp.CSS(`#login-basic input[name=user]`), "ana"),
		chromedp.SendKeys(chromedp.CSS(`#login-basic input[name=password]`), "wrong"),
		chromedp.Submit(chromedp.CSS(`#login-basic`)),
		chromedp.WaitVisible(chromedp.CSS(`#login-error`)))
	if msg := text(`#login-error`); msg != "Wrong credentials." {
		t.Errorf("the login form says %q after a wrong password", msg)
	}
	// The refusal is a 401, which the browser logs: expected here.
	br.mu.Lock()
	br.problems = nil
	br.mu.Unlock()
	do("sign in: back to the run page",
		chromedp.SendKeys(chromedp.CSS(`#login-basic input[name=user]`), "ana"),
		chromedp.SendKeys(chromedp.CSS(`#login-basic input[name=password]`), "s3cret"),
		chromedp.Submit(chromedp.CSS(`#login-basic`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-status .st-waiting`)))
	if who := text(`#who`); !strings.HasPrefix(who, "ana") {
		t.Errorf("the header shows %q, want the signed-in user", who)
	}
	do("pause the run",
		chromedp.SendKeys(chromedp.CSS(`#operator-reason`), "audited from the browser"),
		chromedp.Click(chromedp.CSS(`#pause-run`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-yes`)),
		chromedp.Click(chromedp.CSS(`#confirm-yes`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-status .st-paused`)))
	b.waitStatus(t, "aud-1", "paused")
	do("open the audit page",
		chromedp.Click(chromedp.CSS(`a[data-nav=audit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#audit tbody tr[data-result=accepted]`)))
	row := text(`#audit tbody tr:first-child`)
	for _, want := range []string{"ana", "console", "pause", "aud-1", "accepted", "jetflow pause aud-1 --reason 'audited from the browser'"} {
		if !strings.Contains(row, want) {
			t.Errorf("the newest audit row %q lacks %q", row, want)
		}
	}
	br.shot("console-audit.png")
	br.check()
}
