package webui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// browserTimeout bounds one page step, so a hung browser fails the test
// instead of stalling it; it is not a performance claim.
const browserTimeout = 30 * time.Second

// requireChromium returns the path of Debian's chromium. Without it the
// test is skipped locally and fails in CI (CI=true), so CI cannot pass
// without having driven a real browser.
func requireChromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("headless Chromium is not started in -short mode")
	}
	path, err := exec.LookPath("chromium")
	if err != nil {
		msg := "chromium is not installed (apt-get install -y chromium): the browser tests of the web pages need it"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

// newBrowser starts headless Chromium with a fresh profile for the test.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := requireChromium(t)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()))
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser, bound to ctx
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// person is one browser profile (its own cookies) in the shared browser.
func person(t *testing.T, browser context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The first run opens the tab and binds it to its context: that must be
	// ctx, not a step's context with a deadline.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	return ctx
}

// step runs actions with a deadline.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, browserTimeout)
	defer cancel()
	if err := chromedp.Do(tctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, browserTimeout)
	defer cancel()
	v, err := chromedp.Run(tctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// site is ripcord's pages and a fake GitHub that signs people in.
type site struct {
	url   string
	oauth *githubtest.OAuth
}

func newSite(t *testing.T) site {
	t.Helper()
	gh := githubtest.NewServer(t)
	o := githubtest.NewOAuth(gh)
	o.AddUser("alice", "acme/shop")
	o.AddUser("mallory", "mallory/own")
	f := newFixture(t, testdb.URL(t, "sqlite"))
	f.seedShop(t)
	app := pipeline.AppIdentity{Configured: true, ID: githubtest.AppID, ClientID: githubtest.OAuthClientID,
		ClientSecret: githubtest.OAuthClientSecret, WebURL: o.WebURL()}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	h, _ := newTestHandler(f, srv.URL, gh.URL(), func() pipeline.AppIdentity { return app }, nil, now)
	h.routes(mux)
	return site{url: srv.URL, oauth: o}
}

func TestBrowser(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	s := newSite(t)
	bodyText := `document.body.innerText`

	t.Run("not signed in sees nothing", func(t *testing.T) {
		p := person(t, browser)
		for _, path := range []string{"/", "/releases/shop-3"} {
			step(t, p, "open "+path, chromedp.Navigate(s.url+path), chromedp.WaitVisible(chromedp.CSS("#sign-in")))
			if text := eval[string](t, p, bodyText); strings.Contains(text, "ghcr.io") || strings.Contains(text, "production") {
				t.Errorf("%s shows release data before sign-in:\n%s", path, text)
			}
		}
	})

	t.Run("alice signs in and sees her releases, then their timeline", func(t *testing.T) {
		p := person(t, browser)
		s.oauth.SignInAs("alice")
		step(t, p, "sign in", chromedp.Navigate(s.url+"/"), chromedp.Click(chromedp.CSS("#sign-in-link")),
			chromedp.WaitVisible(chromedp.CSS("table.releases")))
		if who := eval[string](t, p, `document.querySelector('#signed-in-as').innerText`); !strings.Contains(who, "alice") {
			t.Errorf("header says %q", who)
		}
		ids := eval[[]string](t, p, `Array.from(document.querySelectorAll('tr.release')).map(r => r.dataset.releaseId)`)
		if want := []string{"shop-3", "shop-2", "shop-1", "shop-s1"}; !slices.Equal(ids, want) {
			t.Errorf("rows %v, want %v (production newest first, then staging; no vault)", ids, want)
		}
		states := eval[[]string](t, p, `Array.from(document.querySelectorAll('tr.release .state')).map(e => e.innerText)`)
		if want := []string{"failed", "healthy", "eligible", "superseded", "eligible", "progressing"}; !slices.Equal(states[:len(want)], want) {
			t.Errorf("state and eligibility badges %v, want %v", states, want)
		}

		step(t, p, "open shop-3", chromedp.Click(chromedp.CSS(`tr[data-release-id="shop-3"] a`)), chromedp.WaitVisible(chromedp.CSS("#timeline")))
		types := eval[[]string](t, p, `Array.from(document.querySelectorAll('li.event')).map(e => e.dataset.type)`)
		// What the failed deploy's fact wrote, in the store's order, then the
		// two events seedShop wrote out of time order.
		want := []string{"release_opened", "fact_received", "deployment_received", "state_changed", "failure_detected",
			"command_received", "gate_evaluated"}
		if !slices.Equal(types, want) {
			t.Errorf("timeline %v, want %v", types, want)
		}
		if who := eval[string](t, p, `document.querySelector('#who').innerText`); who != "octocat" {
			t.Errorf("who = %q, want octocat (from the command's audit event)", who)
		}
		if r := eval[string](t, p, `document.querySelector('#no-rollout').innerText`); r != "no rollout" {
			t.Errorf("rollout section says %q", r)
		}

		step(t, p, "sign out", chromedp.Click(chromedp.CSS(`header form button`)), chromedp.WaitVisible(chromedp.CSS("#sign-in")))
	})

	t.Run("mallory cannot read acme/shop and sees none of it", func(t *testing.T) {
		p := person(t, browser)
		s.oauth.SignInAs("mallory")
		step(t, p, "sign in", chromedp.Navigate(s.url+"/"), chromedp.Click(chromedp.CSS("#sign-in-link")),
			chromedp.WaitVisible(chromedp.CSS("#no-releases")))
		if text := eval[string](t, p, bodyText); strings.Contains(text, "shop") || strings.Contains(text, "vault") {
			t.Errorf("mallory's page shows releases:\n%s", text)
		}
		step(t, p, "open shop-3", chromedp.Navigate(s.url+"/releases/shop-3"), chromedp.WaitVisible(chromedp.CSS("#message")))
		if text := eval[string](t, p, bodyText); !strings.Contains(text, "No such release") || strings.Contains(text, "ghcr.io") {
			t.Errorf("mallory's release page:\n%s", text)
		}
	})
}
