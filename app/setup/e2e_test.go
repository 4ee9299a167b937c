package setup_test

import (
	"bytes"
	"context"
	"database/sql"
	"html"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/app/setup"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// The whole manifest flow on a GitHub Enterprise Server address: the page
// offers the manifest, a wrong or reused state and a spent code are refused,
// the right callback stores the App encrypted and the running server takes
// its webhooks and acts as it at once, and a restart finds it again.
func TestRegisterTheAppFromThePage(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := start(t, dbURL, true)
		web := strings.TrimSuffix(e.apiURL, "api/v3/")

		// The releases page redirects to /setup; without it, the status page links there.
		homeStatus, home, homeHdr := e.get("/")
		if !(homeStatus == http.StatusSeeOther && homeHdr.Get("Location") == "/setup") &&
			!(homeStatus == http.StatusOK && strings.Contains(home, `href="/setup"`)) {
			t.Errorf("GET / without an App: HTTP %d to %q, neither a redirect nor a link to /setup:\n%s", homeStatus, homeHdr.Get("Location"), home)
		}
		status, page, hdr := e.get(e.setupPage(""))
		fs := forms(t, page)
		if status != http.StatusOK || len(fs) != 1 {
			t.Fatalf("GET /setup: HTTP %d with %d forms, want 200 with the personal form:\n%s", status, len(fs), page)
		}
		if hdr.Get("Cache-Control") != "no-store" {
			t.Errorf("the page holds a one-time state but may be cached: Cache-Control %q", hdr.Get("Cache-Control"))
		}
		if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || hdr.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("another site may frame the page with its Register button: Content-Security-Policy %q, X-Content-Type-Options %q",
				csp, hdr.Get("X-Content-Type-Options"))
		}
		personal := fs[0]
		if want := web + "settings/apps/new?state=" + personal.state(); personal.Action != want || len(personal.state()) < 32 {
			t.Errorf("personal form posts to %q, want %q with a random state", personal.Action, want)
		}
		checkManifest(t, personal.Manifest, e.url)

		_, orgPage, _ := e.get(orgForm(t, page, "acme"))
		orgForms := forms(t, orgPage)
		if len(orgForms) != 2 || orgForms[1].Action != web+"organizations/acme/settings/apps/new?state="+orgForms[1].state() {
			t.Errorf("GET /setup?org=acme: forms %+v, want the organisation's at %sorganizations/acme/settings/apps/new", orgForms, web)
		}
		if status, _, _ := e.get(orgForm(t, page, "acme/../x")); status != http.StatusBadRequest {
			t.Errorf("an organisation name with a path: HTTP %d, want 400", status)
		}

		if got := e.deliver(githubtest.ManifestWebhookSecret); got != http.StatusUnauthorized {
			t.Fatalf("a webhook signed with the App's secret before it is registered: HTTP %d, want 401", got)
		}
		// No secret is configured: the page must not claim webhooks are stored.
		if !strings.Contains(page, "refuses every webhook") || strings.Contains(page, "stores the webhooks") {
			t.Errorf("GET /setup with no webhook secret does not say webhooks are refused:\n%s", page)
		}

		cases := []struct {
			name, query, want string
			status            int
		}{
			{"a state ripcord never issued", "code=fresh&state=0000", "not valid", http.StatusBadRequest},
			{"no state at all", "code=fresh", "not valid", http.StatusBadRequest},
		}
		for _, c := range cases {
			if status, body, _ := e.get("/setup/callback?" + c.query); status != c.status || !strings.Contains(body, c.want) {
				t.Errorf("%s: HTTP %d, want %d with %q:\n%s", c.name, status, c.status, c.want, body)
			}
		}

		// A code GitHub no longer takes (used before, or expired).
		e.gh.SpendManifestCode("spent")
		spentState := orgForms[0].state()
		if status, body, _ := e.get("/setup/callback?code=spent&state=" + spentState); status != http.StatusBadRequest ||
			!strings.Contains(body, "GitHub refused the registration code") {
			t.Errorf("a spent code: HTTP %d, want 400 saying GitHub refused it:\n%s", status, body)
		}
		if status, body, _ := e.get("/setup/callback?code=fresh&state=" + spentState); status != http.StatusBadRequest ||
			!strings.Contains(body, "not valid") {
			t.Errorf("a state used once already: HTTP %d, want 400:\n%s", status, body)
		}

		// A second tab's page, whose registration comes back after the first's.
		_, secondTab, _ := e.get(e.setupPage(""))
		second := forms(t, secondTab)
		if len(second) != 1 {
			t.Fatalf("GET /setup in a second tab: %d forms, want 1", len(second))
		}

		status, _, hdr = e.get("/setup/callback?code=fresh&state=" + personal.state())
		if want := "https://github.com/apps/" + githubtest.AppSlug + "/installations/new"; status != http.StatusSeeOther || hdr.Get("Location") != want {
			t.Fatalf("callback: HTTP %d to %q, want 303 to %q", status, hdr.Get("Location"), want)
		}
		key, hook, secret := e.row()
		if bytes.Contains(key, []byte("PRIVATE KEY")) || bytes.Contains(hook, []byte(githubtest.ManifestWebhookSecret)) ||
			bytes.Contains(secret, []byte("githubtest-client-secret")) {
			t.Errorf("the stored App holds plaintext secrets")
		}

		// The running server takes the new App's webhooks and acts as it.
		if got := e.deliver(githubtest.ManifestWebhookSecret); got != http.StatusAccepted {
			t.Fatalf("a webhook signed with the new App's secret: HTTP %d, want 202", got)
		}
		waitFor(t, "an installation token asked for as the new App", func() bool { return len(e.gh.Tokens()) > 0 })
		if iss := jwtIssuer(t, e.gh.Tokens()[0].JWT); iss != strconv.FormatInt(githubtest.AppID, 10) {
			t.Errorf("the App JWT's issuer is %q, want the registered App's id %d", iss, githubtest.AppID)
		}
		if _, page, _ := e.get("/setup"); !strings.Contains(page, "is configured") || !strings.Contains(page, "/installations/new") ||
			strings.Contains(page, "Delete that one on GitHub") {
			t.Errorf("GET /setup after registering does not say so and link to the install page (and only that):\n%s", page)
		}
		// The second tab's registration: GitHub created another App, which
		// is not used, and the answer says to delete that one.
		if status, body, _ := e.get("/setup/callback?code=second&state=" + second[0].state()); status != http.StatusConflict ||
			!strings.Contains(body, "Delete that one on GitHub") || !strings.Contains(body, "keep App <code>"+strconv.FormatInt(githubtest.AppID, 10)+"</code>") {
			t.Errorf("a second registration's callback once the App is configured: HTTP %d, want 409 saying to delete the new App:\n%s", status, body)
		}
		// A reload of the callback that registered the App created no
		// other: it must not be told to delete anything.
		if status, body, _ := e.get("/setup/callback?code=again&state=" + personal.state()); status != http.StatusConflict ||
			strings.Contains(body, "Delete that one on GitHub") {
			t.Errorf("a reloaded callback once the App is configured: HTTP %d, want 409 deleting nothing:\n%s", status, body)
		}

		e.restart()
		if _, page, _ := e.get("/setup"); !strings.Contains(page, "App id <code>"+strconv.FormatInt(githubtest.AppID, 10)) {
			t.Errorf("after a restart /setup does not show the stored App:\n%s", page)
		}
		if got := e.deliver(githubtest.ManifestWebhookSecret); got != http.StatusAccepted {
			t.Errorf("after a restart a webhook signed with the stored secret: HTTP %d, want 202", got)
		}
		if _, page, _ := e.get("/setup"); !strings.Contains(page, "<code>"+githubtest.AppSlug+"</code>") {
			t.Errorf("after a restart /setup does not name the stored App's slug:\n%s", page)
		}

		// Settings naming another App win over the stored one, whose secret then opens nothing.
		e.configure = func(cfg *config.Config) {
			cfg.GitHub.AppID, cfg.GitHub.PrivateKey = 999, githubtest.AppPrivateKey(t)
		}
		e.restart()
		if _, page, _ := e.get("/setup"); !strings.Contains(page, "App id <code>999</code>") {
			t.Errorf("configured App 999 and a stored one: /setup does not show 999:\n%s", page)
		}
		if got := e.deliver(githubtest.ManifestWebhookSecret); got != http.StatusUnauthorized {
			t.Errorf("configured App 999: a webhook signed with the stored App's secret: HTTP %d, want 401", got)
		}
		if e.key == nil {
			path, _ := store.SQLitePath(dbURL)
			info, err := os.Stat(filepath.Join(filepath.Dir(path), setup.KeyFileName))
			if err != nil || info.Mode().Perm() != 0o600 {
				t.Errorf("key file beside the database: %v, mode %v; want it with mode 0600", err, info.Mode().Perm())
			}
		}
	})
}

func checkManifest(t *testing.T, m map[string]any, public string) {
	t.Helper()
	hook, _ := m["hook_attributes"].(map[string]any)
	got := map[string]any{"url": m["url"], "redirect_url": m["redirect_url"], "setup_url": m["setup_url"],
		"hook_attributes.url": hook["url"], "callback_urls": m["callback_urls"]}
	want := map[string]any{"url": public, "redirect_url": public + "/setup/callback", "setup_url": public + "/setup",
		"hook_attributes.url": public + "/api/github/hook", "callback_urls": []any{public + "/login/callback"}}
	for k := range want {
		if !equalJSON(got[k], want[k]) {
			t.Errorf("manifest %s = %v, want %v", k, got[k], want[k])
		}
	}
	if m["public"] != false {
		t.Errorf("manifest public = %v, want false", m["public"])
	}
	perms := map[string]any{"actions": "write", "checks": "write", "contents": "write", "deployments": "write",
		"issues": "write", "metadata": "read", "pull_requests": "write"}
	if !equalJSON(m["default_permissions"], perms) {
		t.Errorf("manifest default_permissions = %v, want %v", m["default_permissions"], perms)
	}
	var events []string
	for _, e := range m["default_events"].([]any) {
		events = append(events, e.(string))
	}
	for _, e := range []string{"check_run", "issue_comment", "pull_request", "push", "workflow_run"} {
		if !slices.Contains(events, e) {
			t.Errorf("manifest default_events %v lacks %s, which a handler handles", events, e)
		}
	}
	for _, e := range []string{"installation", "installation_repositories", "star"} {
		if slices.Contains(events, e) {
			t.Errorf("manifest default_events %v has %s (sent without subscribing, or handled by nothing)", events, e)
		}
	}
}

// With several replicas, one that has not restarted since another one
// registered the App still has none in use. It must not offer or finish a
// second registration: the newer stored App would replace the first one
// at every replica's next start (and /setup is open to whoever reaches it
// until then).
func TestASecondRegistrationDoesNotReplaceTheStoredApp(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := start(t, dbURL, false)
		_, page, _ := e.get(e.setupPage(""))
		fs := forms(t, page)
		if len(fs) != 1 {
			t.Fatalf("GET /setup before any registration: %d forms, want 1", len(fs))
		}

		// Another replica registers App 777 in the shared database.
		db, err := store.Open(context.Background(), dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		keys, err := setup.NewKeyring(e.key, setup.KeyFile(dbURL))
		if err != nil {
			t.Fatal(err)
		}
		first := setup.Credentials{AppID: 777, Slug: "ripcord-first", HTMLURL: "https://github.com/apps/ripcord-first",
			ClientID: "Iv1.first", ClientSecret: "first-client-secret", WebhookSecret: "first-hook-secret",
			PrivateKey: githubtest.AppPrivateKey(t), APIURL: e.apiURL, CreatedAt: time.Now().Add(-time.Minute)}
		if err := setup.NewStore(db, keys).Save(context.Background(), first); err != nil {
			t.Fatal(err)
		}

		if _, page, _ := e.get("/setup"); len(forms(t, page)) != 0 || !strings.Contains(page, "777") {
			t.Errorf("GET /setup once another replica registered App 777 still offers a registration or does not name it:\n%s", page)
		}
		// GitHub created an App before it sent the admin back: the answer
		// says that one is not used and is to be deleted.
		if status, body, _ := e.get("/setup/callback?code=fresh&state=" + fs[0].state()); status != http.StatusConflict ||
			!strings.Contains(body, "the App GitHub has just created for this registration is not used") ||
			!strings.Contains(body, "Delete that one on GitHub") || !strings.Contains(body, "keep App <code>777</code>") {
			t.Errorf("a callback once another replica registered an App: HTTP %d, want 409 saying to delete the new App:\n%s", status, body)
		}
		e.restart()
		if _, page, _ := e.get("/setup"); !strings.Contains(page, "App id <code>777</code>") {
			t.Errorf("after a restart the first App is not the one in use:\n%s", page)
		}
	})
}

// GitHub's code stays valid for an hour, so when the exchange fails on the
// way (GitHub answers 5xx, or the connection breaks) the callback must be
// able to run again: the state is not used up, the page says to reload,
// and the reload registers the App. A code GitHub refused still uses the
// state up (TestRegisterTheAppFromThePage).
func TestAFailedCodeExchangeCanBeReloaded(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := start(t, dbURL, false)
		target, err := url.Parse(e.gh.URL())
		if err != nil {
			t.Fatal(err)
		}
		forward := httputil.NewSingleHostReverseProxy(target)
		var calls atomic.Int32
		flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch calls.Add(1) {
			case 1:
				http.Error(w, `{"message":"Bad Gateway"}`, http.StatusBadGateway)
			case 2:
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Errorf("hijack: %v", err)
					return
				}
				conn.Close() // the connection breaks before GitHub answers
			default:
				forward.ServeHTTP(w, r)
			}
		}))
		defer flaky.Close()
		e.configure = func(cfg *config.Config) { cfg.GitHub.APIURL = flaky.URL + "/" }
		e.restart()

		_, page, _ := e.get(e.setupPage(""))
		fs := forms(t, page)
		if len(fs) != 1 {
			t.Fatalf("GET /setup: %d forms, want 1", len(fs))
		}
		callback := "/setup/callback?code=fresh&state=" + fs[0].state()
		for _, failure := range []string{"GitHub answers 502", "the connection breaks"} {
			status, body, _ := e.get(callback)
			if status != http.StatusBadGateway || !strings.Contains(body, "reload") {
				t.Errorf("%s: HTTP %d, want 502 saying to reload:\n%s", failure, status, body)
			}
		}
		status, body, hdr := e.get(callback)
		if want := "https://github.com/apps/" + githubtest.AppSlug + "/installations/new"; status != http.StatusSeeOther || hdr.Get("Location") != want {
			t.Fatalf("the reloaded callback: HTTP %d to %q, want 303 to %q:\n%s", status, hdr.Get("Location"), want, body)
		}
		if n := calls.Load(); n != 3 {
			t.Errorf("the code was sent to GitHub %d times, want 3", n)
		}
	})
}

// A webhook secret configured before the App is registered: webhooks are
// stored, and the set-up page says so rather than that they are refused.
func TestThePageSaysWebhooksAreStoredWhenASecretIsConfigured(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := start(t, dbURL, false)
		e.halt()
		e.configure = func(c *config.Config) { c.GitHub.WebhookSecrets = []string{githubtest.ManifestWebhookSecret} }
		e.run()
		if got := e.deliver(githubtest.ManifestWebhookSecret); got != http.StatusAccepted {
			t.Fatalf("a webhook signed with the configured secret: HTTP %d, want 202", got)
		}
		_, page, _ := e.get(e.setupPage(""))
		if !strings.Contains(page, "stores the webhooks signed with its configured secret") || strings.Contains(page, "refuses every webhook") {
			t.Errorf("GET /setup with a webhook secret configured does not say webhooks are stored:\n%s", page)
		}
	})
}

// The key file beside the SQLite database is made or read when the App is
// stored. When it cannot be (here: a damaged file), the callback must stop
// before it spends GitHub's one-time code: the page says what to fix, and
// once it is fixed the same callback, reloaded, registers the App. Spending
// the code first would leave an App on GitHub whose key is lost.
func TestAKeyFileThatCannotBeReadStopsTheCallbackBeforeTheCode(t *testing.T) {
	e := start(t, testdb.URL(t, "sqlite"), false)
	dbPath, err := store.SQLitePath(e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(filepath.Dir(dbPath), setup.KeyFileName)
	if err := os.WriteFile(keyFile, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, page, _ := e.get(e.setupPage(""))
	fs := forms(t, page)
	if len(fs) != 1 {
		t.Fatalf("GET /setup: %d forms, want 1", len(fs))
	}
	callback := "/setup/callback?code=fresh&state=" + fs[0].state()
	status, body, _ := e.get(callback)
	if status != http.StatusInternalServerError || !strings.Contains(body, "reload this page") || !strings.Contains(body, "secrets_key") {
		t.Fatalf("the callback with a damaged key file: HTTP %d, want 500 saying to fix the key and reload:\n%s", status, body)
	}
	if n := e.gh.Count("POST", "/app-manifests/{code}/conversions"); n != 0 {
		t.Errorf("the code was sent to GitHub %d times before the key could be had, want 0", n)
	}
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	status, body, hdr := e.get(callback)
	if want := "https://github.com/apps/" + githubtest.AppSlug + "/installations/new"; status != http.StatusSeeOther || hdr.Get("Location") != want {
		t.Fatalf("the reloaded callback once the key file is gone: HTTP %d to %q, want 303 to %q:\n%s", status, hdr.Get("Location"), want, body)
	}
	if _, err := os.Stat(keyFile); err != nil {
		t.Errorf("the key file was not made: %v", err)
	}
}

// The database refuses the App after GitHub's code was spent: GitHub gives
// the private key only in that one answer, so the App it created cannot be
// used. The page must say so and what to do (delete it, start again), not
// only the database's error.
func TestAnAppTheDatabaseRefusesIsNamedForDeletion(t *testing.T) {
	e := start(t, testdb.URL(t, "sqlite"), false)
	dbPath, err := store.SQLitePath(e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+dbPath+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TRIGGER refuse_apps BEFORE INSERT ON app_credentials
		BEGIN SELECT RAISE(ABORT, 'the disk is full'); END`); err != nil {
		t.Fatal(err)
	}
	_, page, _ := e.get(e.setupPage(""))
	fs := forms(t, page)
	if len(fs) != 1 {
		t.Fatalf("GET /setup: %d forms, want 1", len(fs))
	}
	status, body, _ := e.get("/setup/callback?code=fresh&state=" + fs[0].state())
	body = html.UnescapeString(body)
	for _, want := range []string{"the disk is full", "GitHub created the App " + githubtest.AppSlug,
		"delete it on GitHub (https://github.com/apps/" + githubtest.AppSlug, "start again from the set-up page"} {
		if !strings.Contains(body, want) {
			t.Errorf("the callback's answer lacks %q", want)
		}
	}
	if status != http.StatusInternalServerError {
		t.Errorf("the callback: HTTP %d, want 500", status)
	}
	if t.Failed() {
		t.Logf("the answer:\n%s", body)
	}
}
