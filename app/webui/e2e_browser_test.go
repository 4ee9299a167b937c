package webui_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/ripcord/ripcord/app/webui"
)

// The Roll back button in headless Chromium on the real server: alice (write)
// rolls back from the releases page and reads the confirmation; bob (read)
// tries from the release page and reads why not. TestBrowser covers reading
// the pages; this is the part that needs the whole server.
func TestBrowserRollback(t *testing.T) {
	t.Parallel()
	browser := webui.NewBrowser(t)
	s := newSite(t)
	flash := `document.querySelector('#flash') ? document.querySelector('#flash').innerText : ''`

	t.Run("alice rolls back from the releases page and sees it queued", func(t *testing.T) {
		p := webui.Person(t, browser)
		webui.Step(t, p, "open the releases page", withSession(s.URL, s.signIn(t, "alice")), chromedp.Navigate(s.URL+"/"),
			chromedp.WaitVisible(chromedp.CSS("form.rollback-form")))
		webui.Step(t, p, "roll back", chromedp.SendKeys(chromedp.CSS(`form.rollback-form input[name="reason"]`), "r3 leaks memory"),
			chromedp.Click(chromedp.CSS(`form.rollback-form button`)), chromedp.WaitVisible(chromedp.CSS("#flash")))
		text := webui.EvalString(t, p, flash)
		if !strings.Contains(text, "Rollback queued") || !strings.Contains(text, "replaces "+r3+" with "+r2) {
			t.Errorf("alice's confirmation = %q", text)
		}
		if id := webui.EvalString(t, p, `document.querySelector('#release-id').firstChild.textContent.trim()`); id != r3 {
			t.Errorf("after the rollback the browser shows %q, want the page of %s", id, r3)
		}
		s.WaitFor("the rollback's pull request", wait, func() bool { return len(s.GitHub.PullRequests(gitops)) == 1 })
	})

	t.Run("bob may only read and is told why he cannot roll back", func(t *testing.T) {
		p := webui.Person(t, browser)
		webui.Step(t, p, "open r3", withSession(s.URL, s.signIn(t, "bob")), chromedp.Navigate(s.URL+releasePath(r3)),
			chromedp.WaitVisible(chromedp.CSS("#rollback form")))
		webui.Step(t, p, "roll back", chromedp.SendKeys(chromedp.CSS(`#rollback input[name="reason"]`), "it is broken"),
			chromedp.Click(chromedp.CSS(`#rollback button`)), chromedp.WaitVisible(chromedp.CSS("#flash")))
		if text := webui.EvalString(t, p, flash); !strings.Contains(text, "Not rolling back: @bob has read access; `/ripcord rollback` needs write") {
			t.Errorf("bob's answer = %q", text)
		}
		webui.Step(t, p, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#timeline")))
		if text := webui.EvalString(t, p, flash); text != "" {
			t.Errorf("the answer is shown again after a reload: %q", text)
		}
		if n := len(s.GitHub.PullRequests(gitops)); n != 1 {
			t.Errorf("pull requests = %d, want alice's one", n)
		}
	})
}

// withSession puts the session cookie of a completed sign-in into the
// browser (see webui.SessionCookie for why it is not signed in by clicks).
func withSession(siteURL string, c *http.Cookie) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		httpOnly := true
		_, err := cdp.Call(ctx, t, network.SetCookie, network.SetCookieParams{Name: c.Name, Value: c.Value, URL: siteURL,
			Path: "/", HTTPOnly: &httpOnly, SameSite: network.CookieSameSiteLax})
		return err
	})
}
