package setup_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// count is the number of rows of table.
func (e *env) count(table string) int {
	e.t.Helper()
	db, err := store.Open(context.Background(), e.dbURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.Read.QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// Until an App is configured, whoever reaches /setup first would register
// their own App, whose webhook secret and key the server then trusts. The
// page offers a registration only with the set-up token the start-up log
// gives: without it, or with another, it answers 403 saying where the
// token is, and gives out no state, so no callback can register an App.
// With it the flow goes on as before; once an App is configured /setup
// shows it to anyone, as it did.
func TestTheSetUpPageNeedsTheTokenFromTheStartUpLog(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := start(t, dbURL, false)
		m := setUpLink.FindStringSubmatch(e.logs.String())
		if m == nil || m[1] != e.url+"/setup?token="+e.token || !strings.Contains(e.logs.String(), "the GitHub App is not configured") {
			t.Errorf("the start-up log does not give the set-up link %s/setup?token=…:\n%s", e.url, e.logs.String())
		}
		if raw, err := base64.RawURLEncoding.DecodeString(e.token); err != nil || len(raw) < 16 {
			t.Errorf("set-up token %q: %d bytes of URL-safe base64 (%v), want at least 16 (128 bits)", e.token, len(raw), err)
		}

		// GET / sends the admin to /setup, which says where the token is.
		if status, _, hdr := e.get("/"); status != http.StatusSeeOther || hdr.Get("Location") != "/setup" {
			t.Errorf("GET / without an App: HTTP %d to %q, want 303 to /setup", status, hdr.Get("Location"))
		}
		flip := "A"
		if strings.HasPrefix(e.token, "A") {
			flip = "B"
		}
		refused := []struct{ name, path string }{
			{"no token", "/setup"},
			{"an empty token", "/setup?token="},
			{"a wrong token", "/setup?token=not-the-token"},
			{"the token with its first character changed", "/setup?token=" + flip + e.token[min(1, len(e.token)):]},
			{"a prefix of the token", "/setup?token=" + e.token[:max(len(e.token)-1, 0)]},
			{"the token twice", "/setup?token=" + e.token + e.token},
			{"an organisation's form with a wrong token", "/setup?org=acme&token=not-the-token"},
		}
		var given []form
		for _, c := range refused {
			status, page, hdr := e.get(c.path)
			given = append(given, forms(t, page)...)
			if status != http.StatusForbidden || len(forms(t, page)) != 0 {
				t.Errorf("GET %s (%s): HTTP %d with %d forms, want 403 with none:\n%s", c.path, c.name, status, len(forms(t, page)), page)
			}
			if !strings.Contains(page, "start-up log") || !strings.Contains(page, e.url+"/setup?token=") {
				t.Errorf("GET %s (%s): the answer does not say the link is in the start-up log:\n%s", c.path, c.name, page)
			}
			if (e.token != "" && strings.Contains(page, e.token)) || hdr.Get("Cache-Control") != "no-store" {
				t.Errorf("GET %s (%s): the answer holds the token, or may be cached (Cache-Control %q)", c.path, c.name, hdr.Get("Cache-Control"))
			}
		}
		if n := e.count("app_setup_states"); n != 0 {
			t.Errorf("refused set-up pages gave out %d states, want none", n)
		}
		// So no callback finishes a registration: GitHub is not even asked.
		if status, body, _ := e.get("/setup/callback?code=fresh&state=0000"); status != http.StatusBadRequest || !strings.Contains(body, "not valid") {
			t.Errorf("a callback with no page's state: HTTP %d, want 400:\n%s", status, body)
		}
		for _, f := range given {
			if status, _, hdr := e.get("/setup/callback?code=fresh&state=" + f.state()); status == http.StatusSeeOther {
				t.Errorf("the callback of a form shown without the token registered an App (303 to %q)", hdr.Get("Location"))
			}
		}
		if n := e.gh.Count("POST", "/app-manifests/{code}/conversions"); n != 0 || e.count("app_credentials") != 0 {
			t.Errorf("without the token: %d code exchanges, %d Apps stored; want none", n, e.count("app_credentials"))
		}
		if got := e.deliver(githubtest.ManifestWebhookSecret); got != http.StatusUnauthorized {
			t.Errorf("a webhook signed with the fake App's secret with no App registered: HTTP %d, want 401", got)
		}

		// A restart logs a new token; the earlier one still opens the page
		// until an App is registered (README: they are all recorded).
		first := e.token
		e.restart()
		if e.token == "" || e.token == first {
			t.Fatalf("the restart's set-up token is %q, the first start's %q: want a new one", e.token, first)
		}
		for _, token := range []string{first, e.token} {
			if status, page, _ := e.get("/setup?token=" + token); status != http.StatusOK || len(forms(t, page)) != 1 {
				t.Errorf("GET /setup with a logged token: HTTP %d with %d forms, want 200 with 1:\n%s", status, len(forms(t, page)), page)
			}
		}

		status, page, _ := e.get(e.setupPage(""))
		fs := forms(t, page)
		if status != http.StatusOK || len(fs) != 1 {
			t.Fatalf("GET /setup with the token: HTTP %d with %d forms, want 200 with 1:\n%s", status, len(fs), page)
		}
		status, orgPage, _ := e.get(orgForm(t, page, "acme"))
		if status != http.StatusOK || len(forms(t, orgPage)) != 2 {
			t.Errorf("the organisation form of the page opened with the token: HTTP %d with %d forms, want 200 with 2:\n%s",
				status, len(forms(t, orgPage)), orgPage)
		}
		status, _, hdr := e.get("/setup/callback?code=fresh&state=" + fs[0].state())
		if want := "https://github.com/apps/" + githubtest.AppSlug + "/installations/new"; status != http.StatusSeeOther || hdr.Get("Location") != want {
			t.Fatalf("callback: HTTP %d to %q, want 303 to %q", status, hdr.Get("Location"), want)
		}
		if got := e.deliver(githubtest.ManifestWebhookSecret); got != http.StatusAccepted {
			t.Errorf("a webhook signed with the registered App's secret: HTTP %d, want 202", got)
		}

		// Configured: the page shows the App, with a token or without.
		for _, path := range []string{"/setup", "/setup?token=not-the-token", e.setupPage("")} {
			if status, page, _ := e.get(path); status != http.StatusOK || !strings.Contains(page, "is configured") || len(forms(t, page)) != 0 {
				t.Errorf("GET %s once the App is configured: HTTP %d, want 200 showing the App:\n%s", path, status, page)
			}
		}
		if n := e.count("app_setup_tokens"); n != 0 {
			t.Errorf("%d set-up tokens are kept once an App is registered, want none", n)
		}
		e.restart()
		if e.token != "" || strings.Contains(e.logs.String(), "token=") {
			t.Errorf("a start with an App logs a set-up token:\n%s", e.logs.String())
		}
	})
}

// Replicas on one PostgreSQL database each log their own token; behind a
// load balancer the admin's requests reach any of them, so each takes the
// token of every other (and a state of any one's page, as before).
func TestEveryReplicaTakesTheSetUpTokenOfAnyOther(t *testing.T) {
	dbURL := testdb.URL(t, "postgres")
	a := start(t, dbURL, false)
	b := start(t, dbURL, false)
	if a.token == "" || b.token == "" || a.token == b.token {
		t.Fatalf("replicas' set-up tokens %q and %q: want two different ones", a.token, b.token)
	}
	for _, c := range []struct {
		name   string
		at     *env
		tokens string
	}{{"b's token at a", a, b.token}, {"a's token at b", b, a.token}} {
		if status, page, _ := c.at.get("/setup?token=" + c.tokens); status != http.StatusOK || len(forms(t, page)) != 1 {
			t.Errorf("%s: HTTP %d with %d forms, want 200 with 1:\n%s", c.name, status, len(forms(t, page)), page)
		}
	}
	_, page, _ := a.get(a.setupPage(""))
	fs := forms(t, page)
	if len(fs) != 1 {
		t.Fatalf("GET /setup at a: %d forms, want 1", len(fs))
	}
	if status, _, hdr := b.get("/setup/callback?code=fresh&state=" + fs[0].state()); status != http.StatusSeeOther {
		t.Fatalf("a's page's callback at b: HTTP %d to %q, want 303", status, hdr.Get("Location"))
	}
	if status, page, _ := a.get("/setup?token=" + b.token); status != http.StatusOK || !strings.Contains(page, "restart this one") || len(forms(t, page)) != 0 {
		t.Errorf("a, once b registered the App: HTTP %d, want 200 naming it and offering no registration:\n%s", status, page)
	}
}
