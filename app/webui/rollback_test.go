package webui

import (
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/app/rollbackflow"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/rollbackpr"
)

func TestCSRFTokenIsBoundToSessionAndAction(t *testing.T) {
	t.Parallel()
	const secret = "test-client-secret"
	alice := session{Login: "alice", Token: "tok-alice", Expires: now.Add(time.Hour)}
	tok, err := csrfToken(secret, alice, rollbackAction("shop-3"))
	if err != nil {
		t.Fatal(err)
	}
	if !validCSRF(secret, alice, rollbackAction("shop-3"), tok) {
		t.Fatal("the token does not pass for its own session and action")
	}
	for _, c := range []struct {
		name, secret string
		ss           session
		action, got  string
	}{
		{"no token", secret, alice, rollbackAction("shop-3"), ""},
		{"another release's form", secret, alice, rollbackAction("shop-2"), tok},
		{"another person", secret, session{Login: "mallory", Token: "tok-mallory", Expires: alice.Expires}, rollbackAction("shop-3"), tok},
		{"the same person signed in again", secret, session{Login: "alice", Token: "tok-alice-2", Expires: alice.Expires.Add(time.Minute)}, rollbackAction("shop-3"), tok},
		{"another server's key", "another-secret", alice, rollbackAction("shop-3"), tok},
		{"a token cut short", secret, alice, rollbackAction("shop-3"), tok[:len(tok)-1]},
	} {
		t.Run(c.name, func(t *testing.T) {
			if validCSRF(c.secret, c.ss, c.action, c.got) {
				t.Errorf("the token passes")
			}
		})
	}
}

func TestFlashSaysWhatTheRollbackCameTo(t *testing.T) {
	t.Parallel()
	plan := rollbackflow.Plan{Target: "shop-2", Record: records.Record{ReleaseID: "rollback-1", RollbackOf: "shop-3"},
		Request: rollbackpr.Request{Repository: "acme/gitops", Rollback: rollbackpr.Rollback{Eligibility: rollbackpr.Eligibility{Eligible: true}}}}
	notEligible := plan
	notEligible.Request.Rollback.Eligibility = rollbackpr.Eligibility{Reason: "never healthy"}
	for _, c := range []struct {
		name string
		out  rollbackflow.Outcome
		ok   bool
		want []string
	}{
		{"a refusal names the reason", rollbackflow.Outcome{Refused: "@bob has read access; `/ripcord rollback` needs write"}, false,
			[]string{"Not rolling back: @bob has read access; `/ripcord rollback` needs write."}},
		{"a queued rollback names what it replaces", rollbackflow.Outcome{Plan: plan}, true,
			[]string{"Rollback queued: release rollback-1 replaces shop-3 with shop-2, an eligible rollback target", "acme/gitops"}},
		{"a named target that is not eligible says it gets every gate", rollbackflow.Outcome{Plan: notEligible}, true,
			[]string{"not an eligible rollback target (never healthy), so it gets every gate"}},
		{"a second request while the job waits", rollbackflow.Outcome{Plan: plan, Queued: rollbackflow.Queued{Duplicate: true}}, true,
			[]string{"This rollback was queued already"}},
		{"an open rollback links its pull request", rollbackflow.Outcome{Plan: plan,
			Open: &records.Record{ReleaseID: "rollback-1", PRURL: "https://github.example/acme/gitops/pull/3"}}, true,
			[]string{"This rollback is open already: release rollback-1.", "https://github.example/acme/gitops/pull/3"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := flashFor(c.out)
			text := f.Text + " " + f.Link
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("flash %q lacks %q", text, w)
				}
			}
			if f.OK != c.ok {
				t.Errorf("flash OK = %v, want %v", f.OK, c.ok)
			}
		})
	}
}

// The form is drawn where a rollback can start and nowhere else.
func TestRollbackFormsOnThePages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testdb.URL(t, "sqlite"))
	f.seedShop(t)
	app := appWith("https://github.example/")
	_, mux := newTestHandler(f, publicURL, "https://api.github.example/", func() pipeline.AppIdentity { return app }, newFakeGitHub(), now)
	alice := sessionCookieFor(t, app, "alice", "tok-alice")

	list := body(get(t, mux, "/", alice))
	if n := strings.Count(list, `class="rollback-form"`); n != 1 {
		t.Errorf("the releases page has %d Roll back forms, want 1 (production has an eligible target, staging none)", n)
	}
	if !strings.Contains(list, `action="/releases/shop-3/rollback"`) {
		t.Errorf("the form does not post to the current release")
	}
	for _, c := range []struct {
		name, id string
		want     string // "" for no form
	}{
		{"the current release rolls back to the server's choice", "shop-3", `action="/releases/shop-3/rollback"`},
		{"an eligible release offers itself as the target", "shop-2", `name="to" value="shop-2"`},
		{"an environment with nothing to roll back to has no form", "shop-s1", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := body(get(t, mux, "/releases/"+c.id, alice))
			has := strings.Contains(b, `class="rollback-form"`)
			if c.want == "" && has || c.want != "" && !strings.Contains(b, c.want) {
				t.Errorf("form on %s: has %v, want %q", c.id, has, c.want)
			}
		})
	}
}

// While a rollback's pull request is open, the release it replaces still
// runs: the list's form and "current" tag stay on it, and the opened
// record is shown as pending, with no form of its own.
func TestRollbackFormsWhileARollbackIsOpen(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testdb.URL(t, "sqlite"))
	f.seedShop(t)
	f.report(t, release{"shop-4", "shop", "production", "eu-1", "acme/shop", "ghcr.io/acme/shop:v4", records.TaskSuccess,
		t0.Add(150 * time.Minute)})
	f.open(t, records.Record{ReleaseID: "shop-rb", App: "shop", Environment: "production", Cluster: "eu-1", Repository: "acme/shop",
		Image: "ghcr.io/acme/shop:v2", Kind: records.KindRollback, RollbackOf: "shop-4", RollbackReason: "errors",
		PRURL: "https://github.example/acme/shop/pull/7", PRNumber: 7, CreatedAt: t0.Add(170 * time.Minute)})
	app := appWith("https://github.example/")
	_, mux := newTestHandler(f, publicURL, "https://api.github.example/", func() pipeline.AppIdentity { return app }, newFakeGitHub(), now)
	alice := sessionCookieFor(t, app, "alice", "tok-alice")

	list := body(get(t, mux, "/", alice))
	if !strings.Contains(list, `action="/releases/shop-4/rollback"`) || strings.Contains(list, `action="/releases/shop-rb/rollback"`) {
		t.Errorf("the releases page's form does not post to shop-4, the release that runs")
	}
	if !strings.Contains(list, `<a href="/releases/shop-4">shop-4</a> <span class="tag current">current</span>`) {
		t.Errorf("shop-4 is not marked current")
	}
	if strings.Contains(list, `<a href="/releases/shop-rb">shop-rb</a> <span class="tag">rollback of shop-4</span> <span class="tag current">`) ||
		!strings.Contains(list, `rollback of shop-4</span> <span class="tag pending"`) {
		t.Errorf("the opened rollback is not shown as pending")
	}
	if b := body(get(t, mux, "/releases/shop-rb", alice)); strings.Contains(b, `class="rollback-form"`) {
		t.Errorf("the opened rollback's page offers a Roll back form")
	}
	if b := body(get(t, mux, "/releases/shop-4", alice)); !strings.Contains(b, `action="/releases/shop-4/rollback"`) {
		t.Errorf("the running release's page lacks its Roll back form")
	}
}
