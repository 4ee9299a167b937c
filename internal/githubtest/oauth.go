package githubtest

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
)

// GitHub's web side of "sign in with GitHub" through the App's OAuth client
// (/login/oauth/authorize and /login/oauth/access_token) and the user-token
// endpoints a signed-in page reads (/user, /user/installations and
// /user/installations/{installation_id}/repositories).
//
// The two /login/oauth endpoints live on github.com, not on the API, and are
// not in GitHub's OpenAPI description, so OAuth serves them from a second
// loopback server (WebURL) without the description's check. The /user
// endpoints are on the API server and checked like every other request.

// The App's OAuth client, as the manifest conversion hands it out.
const (
	OAuthClientID     = "Iv1.githubtest"
	OAuthClientSecret = "githubtest-client-secret"
)

// OAuth is the fake's sign-in side: users, who each can read some
// repositories through the App's installations, and the one of them the
// browser is signed in to GitHub as.
type OAuth struct {
	api *Server
	web *httptest.Server

	mu      sync.Mutex
	current string              // the login GitHub's web side treats as signed in
	repos   map[string][]string // login -> readable repositories, "owner/name"
	codes   map[string]string   // authorization code -> login; deleted when exchanged
	tokens  map[string]string   // user access token -> login
}

// NewOAuth starts GitHub's web side for s and installs the /user endpoints on
// s (replacing any default for them). It stops when the test ends.
func NewOAuth(s *Server) *OAuth {
	o := &OAuth{api: s, repos: map[string][]string{}, codes: map[string]string{}, tokens: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login/oauth/authorize", o.authorize)
	mux.HandleFunc("POST /login/oauth/access_token", o.accessToken)
	o.web = httptest.NewServer(mux)
	s.t.Cleanup(o.web.Close)
	s.Handle("GET /user", o.getUser)
	s.Handle("GET /user/installations", o.listInstallations)
	s.Handle("GET /user/installations/{installation_id}/repositories", o.listRepositories)
	return o
}

// WebURL is GitHub's web address with a trailing slash, where /login/oauth/
// lives (AppIdentity.WebURL).
func (o *OAuth) WebURL() string { return o.web.URL + "/" }

// AddUser makes login a GitHub user who can read repos ("owner/name") through
// the App's installation on each repository's owner. A user with no repos has
// no installation they can see.
func (o *OAuth) AddUser(login string, repos ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.repos[login] = append([]string(nil), repos...)
}

// SignInAs makes the browser signed in to GitHub as login, so that
// authorize sends it straight back with a code, as GitHub does for a user who
// already authorised the App. An empty login signs out: authorize refuses.
func (o *OAuth) SignInAs(login string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.current = login
}

func (o *OAuth) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != OAuthClientID {
		http.Error(w, "githubtest: unknown client_id "+q.Get("client_id"), http.StatusNotFound)
		return
	}
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Host == "" {
		http.Error(w, "githubtest: redirect_uri must be an absolute URL", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	login := o.current
	code := ""
	if login != "" {
		code = randomHex()
		o.codes[code] = login
	}
	o.mu.Unlock()
	if login == "" {
		http.Error(w, "githubtest: no one is signed in to GitHub (OAuth.SignInAs)", http.StatusForbidden)
		return
	}
	back := redirect.Query()
	back.Set("code", code)
	if st := q.Get("state"); st != "" {
		back.Set("state", st)
	}
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// accessToken answers as GitHub does: 200 with an "error" field for a wrong
// client secret or a code that is unknown or already used.
func (o *OAuth) accessToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "githubtest: "+err.Error(), http.StatusBadRequest)
		return
	}
	if r.PostForm.Get("client_id") != OAuthClientID || r.PostForm.Get("client_secret") != OAuthClientSecret {
		writeJSON(w, http.StatusOK, map[string]any{"error": "incorrect_client_credentials",
			"error_description": "The client_id and/or client_secret passed are incorrect."})
		return
	}
	o.mu.Lock()
	login, ok := o.codes[r.PostForm.Get("code")]
	delete(o.codes, r.PostForm.Get("code"))
	token := ""
	if ok {
		token = "ghu_githubtest" + randomHex()
		o.tokens[token] = login
	}
	o.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusOK, map[string]any{"error": "bad_verification_code",
			"error_description": "The code passed is incorrect or expired."})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"access_token": token, "token_type": "bearer", "scope": ""})
}

// userFor is the login behind a request's user token, or "" after a 401.
func (o *OAuth) userFor(w http.ResponseWriter, r *http.Request) string {
	h := r.Header.Get("Authorization")
	token := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(h, "Bearer "), "token "))
	o.mu.Lock()
	login := o.tokens[token]
	o.mu.Unlock()
	if login == "" {
		writeError(w, http.StatusUnauthorized, "Bad credentials")
	}
	return login
}

// owners are the accounts of the installations login can see: one per
// owner of a repository they can read.
func (o *OAuth) owners(login string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, full := range o.repos[login] {
		owner, _, _ := strings.Cut(full, "/")
		if !seen[owner] {
			seen[owner] = true
			out = append(out, owner)
		}
	}
	sort.Strings(out)
	return out
}

func (o *OAuth) getUser(w http.ResponseWriter, r *http.Request, _ map[string]string) {
	if login := o.userFor(w, r); login != "" {
		writeJSON(w, http.StatusOK, o.api.userJSON(login))
	}
}

func (o *OAuth) listInstallations(w http.ResponseWriter, r *http.Request, _ map[string]string) {
	login := o.userFor(w, r)
	if login == "" {
		return
	}
	var all []map[string]any
	for _, owner := range o.owners(login) {
		all = append(all, o.installationJSON(owner))
	}
	page := paginate(w, r, all)
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(all), "installations": page})
}

// UserInstallationID is the id of the App's installation on owner as the
// /user/installations endpoints report it.
func UserInstallationID(owner string) int64 { return loginID(owner) }

func (o *OAuth) installationJSON(owner string) map[string]any {
	id := UserInstallationID(owner)
	return map[string]any{
		"id": id, "app_id": AppID, "app_slug": AppSlug, "target_type": "Organization",
		"target_id": loginID(owner), "account": o.api.userJSON(owner), "repository_selection": "selected",
		"access_tokens_url": o.api.apiURL("app/installations/%d/access_tokens", id),
		"repositories_url":  o.api.apiURL("installation/repositories"),
		"html_url":          htmlURL("organizations/%s/settings/installations/%d", owner, id),
		"permissions":       map[string]any{"checks": "write", "contents": "write"},
		"events":            []string{"workflow_run", "check_run", "issue_comment"},
		"created_at":        "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z",
		"single_file_name": nil,
	}
}

func (o *OAuth) listRepositories(w http.ResponseWriter, r *http.Request, p map[string]string) {
	login := o.userFor(w, r)
	if login == "" {
		return
	}
	id := atoi64(p["installation_id"])
	o.mu.Lock()
	var names []string
	for _, full := range o.repos[login] {
		owner, _, _ := strings.Cut(full, "/")
		if UserInstallationID(owner) == id {
			names = append(names, full)
		}
	}
	o.mu.Unlock()
	if len(names) == 0 {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	o.api.mu.Lock()
	all := make([]map[string]any, 0, len(names))
	for _, full := range names {
		all = append(all, o.api.repoJSON(o.api.repoLocked(full)))
	}
	o.api.mu.Unlock()
	page := paginate(w, r, all)
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(all), "repositories": page})
}

func randomHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}
