package webui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/app/setup"
	"github.com/ripcord/ripcord/app/webui"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

const (
	appRepo = "acme/checkout"
	gitops  = "acme/gitops"
	r2      = "r2:prod-eu/prod"
	r3      = "r3:prod-eu/prod" // the current release: failed
	// wait bounds how long a failure takes to show: CI shares two cores
	// with the whole suite, and ran these packages up to six times slower.
	wait = 45 * time.Second
)

const repoConfig = `version: 1
apps:
  checkout:
    environments:
      prod:
        cluster: prod-eu
        workflows: [deploy.yml]
        rollback:
          mode: pull-request
          repository: acme/gitops
          base: main
          file: apps/checkout/prod/release.yaml
          fields: {image: image.ref, digest: image.digest, release_id: release.id}
`

const releaseYAML = `release:
  id: r3:prod-eu/prod
image:
  ref: ghcr.io/acme/checkout:v3
  digest: sha256:3333333333333333333333333333333333333333333333333333333333333333
`

// jobKinds are the jobs a rollback from the page can lead to.
var jobKinds = []string{"rollback_pull_request", "release_check", "delivery"}

// site is the whole server on SQLite with the App's OAuth client stored as
// /setup stores it, a fake GitHub that signs people in, and checkout's
// history in prod: r1 and r2 healthy, r3 failed. alice may write to
// acme/checkout, bob only read it, mallory cannot see it.
type site struct {
	*e2etest.Env
	oauth *githubtest.OAuth
}

func newSite(t *testing.T) *site {
	t.Helper()
	// SQLite only: the stored App's key file sits beside the database file.
	e := e2etest.Start(t, testdb.URL(t, "sqlite"), app.Options{})
	storeOAuthClient(t, e)
	e.Restart()
	s := &site{Env: e, oauth: githubtest.NewOAuth(e.GitHub)}
	e.GitHub.PutFile(appRepo, "main", ".github/ripcord.yml", repoConfig)
	e.GitHub.PutFile(gitops, "main", "apps/checkout/prod/release.yaml", releaseYAML)
	e.Install(appRepo)
	e.Install(gitops)
	e.CheckRequestsAtCleanup(t)
	for i, status := range []string{"success", "success", "failed"} {
		n := i + 1
		e.Fact(map[string]any{"source": "task", "repository": appRepo, "workflow_run_id": 7000 + n, "run_attempt": 1,
			"status": status, "app": "checkout", "environment": "prod", "cluster": "prod-eu",
			"release_id": fmt.Sprintf("r%d:prod-eu/prod", n), "observed_at": time.Now().UTC().Format(time.RFC3339Nano),
			"images":   []string{fmt.Sprintf("ghcr.io/acme/checkout:v%d@sha256:%s", n, strings.Repeat(fmt.Sprint(n), 64))},
			"metadata": map[string]string{"commit": strings.Repeat(fmt.Sprintf("%x", 10+n), 40)}})
		time.Sleep(2 * time.Millisecond) // distinct created_at: eligibility orders by it
	}
	e.GitHub.SetPermission(appRepo, "alice", "write")
	e.GitHub.SetPermission(appRepo, "bob", "read")
	s.oauth.AddUser("alice", appRepo)
	s.oauth.AddUser("bob", appRepo)
	s.oauth.AddUser("mallory", "mallory/own")
	return s
}

// storeOAuthClient saves the configured App with its OAuth client, as the
// /setup callback does, so the server can seal sessions.
func storeOAuthClient(t *testing.T, e *e2etest.Env) {
	t.Helper()
	cfg := e.Config()
	db, err := store.Open(context.Background(), cfg.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	keys, err := setup.NewKeyring(cfg.SecretsKey, setup.KeyFile(cfg.Database))
	if err != nil {
		t.Fatal(err)
	}
	err = setup.NewStore(db, keys).Save(context.Background(), setup.Credentials{AppID: githubtest.AppID, Slug: "ripcord-test",
		ClientID: githubtest.OAuthClientID, ClientSecret: githubtest.OAuthClientSecret, WebhookSecret: e2etest.Secret,
		PrivateKey: githubtest.AppPrivateKey(t), APIURL: cfg.GitHub.APIURL, CreatedAt: time.Now()})
	if err != nil {
		t.Fatalf("store the App's OAuth client: %v", err)
	}
}

// signIn gets a user token for login from GitHub's sign-in (the fake's
// authorize and access_token) and returns the session cookie the server's
// callback would set for it.
func (s *site) signIn(t *testing.T, login string) *http.Cookie {
	t.Helper()
	s.oauth.SignInAs(login)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	q := url.Values{"client_id": {githubtest.OAuthClientID}, "redirect_uri": {s.URL + "/login/callback"}, "state": {"s"}}
	resp, err := noFollow.Get(s.oauth.WebURL() + "login/oauth/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("authorize as %s answered %d to %q", login, resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, err = http.PostForm(s.oauth.WebURL()+"login/oauth/access_token", url.Values{"client_id": {githubtest.OAuthClientID},
		"client_secret": {githubtest.OAuthClientSecret}, "code": {loc.Query().Get("code")}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("access token for %s: %v", login, err)
	}
	c, err := webui.SessionCookie(githubtest.OAuthClientSecret, login, tok.AccessToken, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// page is one answer of the server, redirects not followed.
type page struct {
	status   int
	location string
	body     string
	cookies  []*http.Cookie
}

func (s *site) do(t *testing.T, method, path string, form url.Values, cookies ...*http.Cookie) page {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, s.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, location: resp.Header.Get("Location"), body: string(b), cookies: resp.Cookies()}
}

// csrfInput finds the Roll back form's token: the page's Sign out form
// carries a token too, for another action.
var csrfInput = regexp.MustCompile(`<form class="rollback-form"[^>]*>\s*<input type="hidden" name="csrf" value="([^"]+)"`)

// csrf is the token of the Roll back form on release id's page.
func (s *site) csrf(t *testing.T, id string, who *http.Cookie) string {
	t.Helper()
	p := s.do(t, "GET", releasePath(id), nil, who)
	m := csrfInput.FindStringSubmatch(p.body)
	if p.status != http.StatusOK || m == nil {
		t.Fatalf("GET %s = %d with no Roll back form:\n%s", releasePath(id), p.status, p.body)
	}
	return m[1]
}

func releasePath(id string) string { return "/releases/" + url.PathEscape(id) }

// rollbackJobs counts the rollback pull-request jobs queued so far.
func (s *site) rollbackJobs() int {
	return s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'rollback_pull_request'`)
}
