package webui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// fakeGitHub answers the pages' GitHub calls from tables.
type fakeGitHub struct {
	tokens map[string]string   // code -> token
	logins map[string]string   // token -> login
	repos  map[string][]string // token -> readable repositories
	calls  int                 // ReadableRepos calls
}

func (g *fakeGitHub) Exchange(_ context.Context, code, _ string) (string, error) {
	if tok, ok := g.tokens[code]; ok {
		return tok, nil
	}
	if code == "code-github-down" {
		return "", errors.New("exchange the sign-in code: GitHub answered 503 Service Unavailable")
	}
	return "", fmt.Errorf("exchange the sign-in code: %w", errCodeRefused) // as userClient says bad_verification_code
}

func (g *fakeGitHub) User(_ context.Context, token string) (string, error) {
	if l, ok := g.logins[token]; ok {
		return l, nil
	}
	return "", errors.New("401 Bad credentials")
}

func (g *fakeGitHub) ReadableRepos(_ context.Context, token string) ([]string, error) {
	g.calls++
	if token == "tok-revoked" {
		return nil, errors.Join(errTokenRefused, errors.New("401 Bad credentials"))
	}
	return g.repos[token], nil
}

func newFakeGitHub() *fakeGitHub {
	return &fakeGitHub{
		tokens: map[string]string{"code-alice": "tok-alice", "code-mallory": "tok-mallory"},
		logins: map[string]string{"tok-alice": "alice", "tok-mallory": "mallory"},
		repos:  map[string][]string{"tok-alice": {"ACME/Shop"}, "tok-mallory": {"mallory/own"}},
	}
}

const publicURL = "http://ripcord.test"

var now = t0.Add(3 * time.Hour)

// sessionCookieFor is the cookie a completed sign-in leaves.
func sessionCookieFor(t *testing.T, app pipeline.AppIdentity, login, token string) *http.Cookie {
	t.Helper()
	s, err := newSealer(app.ClientSecret)
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.seal(sessionCookie, session{Login: login, Token: token, Expires: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return &http.Cookie{Name: sessionCookie, Value: v}
}

func get(t *testing.T, h http.Handler, path string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, publicURL+path, nil)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func body(w *httptest.ResponseRecorder) string {
	b, _ := io.ReadAll(w.Result().Body)
	return string(b)
}

func TestPages(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		f := newFixture(t, dbURL)
		f.seedShop(t)
		f.report(t, release{"evil-1", `<script>alert("app")</script>`, "production", "eu-1", "acme/shop",
			`ghcr.io/acme/x:"><img src=x onerror=alert(1)>`, "success", t0.Add(10 * time.Minute)})
		app := appWith("https://github.example/")
		gh := newFakeGitHub()
		_, mux := newTestHandler(f, publicURL, "https://api.github.example/", func() pipeline.AppIdentity { return app }, gh, now)
		alice := sessionCookieFor(t, app, "alice", "tok-alice")
		mallory := sessionCookieFor(t, app, "mallory", "tok-mallory")

		t.Run("the releases of a readable repository, and none of another", func(t *testing.T) {
			w := get(t, mux, "/", alice)
			b := body(w)
			if w.Code != http.StatusOK {
				t.Fatalf("GET / = %d\n%s", w.Code, b)
			}
			for _, want := range []string{"shop-1", "shop-2", "shop-3", "shop-s1", "ghcr.io/acme/shop:v2", "Signed in as <strong>alice</strong>",
				"ripcord rollback --app shop --environment production --cluster eu-1 --to shop-2"} {
				if !strings.Contains(b, want) {
					t.Errorf("the page lacks %q", want)
				}
			}
			for _, leak := range []string{"vault", "acme/secret"} {
				if strings.Contains(b, leak) {
					t.Errorf("alice cannot read acme/secret, yet the page shows %q", leak)
				}
			}
		})
		t.Run("a rollback names what it replaces and links its pull request", func(t *testing.T) {
			// A rollback names a release of its own app, environment and
			// cluster (the releases API refuses any other).
			f.open(t, records.Record{ReleaseID: "shop-c1", App: "shop", Environment: "canary", Cluster: "eu-1", Repository: "acme/shop",
				Image: "ghcr.io/acme/shop:v3", Kind: records.KindPromote, CreatedAt: t0.Add(160 * time.Minute)})
			f.open(t, records.Record{ReleaseID: "shop-rb", App: "shop", Environment: "canary", Cluster: "eu-1", Repository: "acme/shop",
				Image: "ghcr.io/acme/shop:v2", Kind: records.KindRollback, RollbackOf: "shop-c1", RollbackReason: "errors",
				PRURL: "https://github.example/acme/shop/pull/7", PRNumber: 7, CreatedAt: t0.Add(170 * time.Minute)})
			b := body(get(t, mux, "/", alice))
			for _, want := range []string{"rollback of shop-c1", `<a href="https://github.example/acme/shop/pull/7">#7</a>`} {
				if !strings.Contains(b, want) {
					t.Errorf("the page lacks %q", want)
				}
			}
		})
		t.Run("markup in records is escaped", func(t *testing.T) {
			b := body(get(t, mux, "/", alice))
			if strings.Contains(b, "<script") || strings.Contains(b, "<img") {
				t.Errorf("record fields reached the page as markup:\n%s", b)
			}
			if !strings.Contains(b, "&lt;script&gt;alert(&#34;app&#34;)&lt;/script&gt;") {
				t.Errorf("the escaped app name is missing")
			}
			b = body(get(t, mux, "/releases/"+url.PathEscape("<script>x</script>"), alice))
			if strings.Contains(b, "<script>x") || !strings.Contains(b, "&lt;script&gt;x") {
				t.Errorf("the release id in the 404 page is not escaped:\n%s", b)
			}
		})
		// pr.url is whatever a release's sender wrote (api_token or a
		// workflow's OIDC token): the pages link it, so a script URL must
		// come out inert, as html/template's URL filter makes it.
		t.Run("a pull request link that is a script does not run", func(t *testing.T) {
			f.open(t, records.Record{ReleaseID: "shop-js", App: "shop", Environment: "canary", Cluster: "eu-2", Repository: "acme/shop",
				Image: "ghcr.io/acme/shop:v9", Kind: records.KindPromote, PRURL: "javascript:alert(document.cookie)", PRNumber: 9,
				CreatedAt: t0.Add(180 * time.Minute)})
			for _, path := range []string{"/", "/releases/shop-js"} {
				b := body(get(t, mux, path, alice))
				if !strings.Contains(b, "#9") || strings.Contains(strings.ToLower(b), "javascript:") {
					t.Errorf("GET %s links the pull request as a script (or not at all):\n%s", path, b)
				}
			}
		})
		t.Run("a user who can read nothing sees no release", func(t *testing.T) {
			b := body(get(t, mux, "/", mallory))
			if strings.Contains(b, "shop-") || strings.Contains(b, "vault") || !strings.Contains(b, "No releases in repositories you can read") {
				t.Errorf("mallory's page:\n%s", b)
			}
		})
		t.Run("release pages", func(t *testing.T) {
			for _, c := range []struct {
				name, path string
				cookie     *http.Cookie
				status     int
				want       string
			}{
				{"a readable release", "/releases/shop-3", alice, http.StatusOK, "gate error-rate failed"},
				{"an unknown release is not found", "/releases/nope", alice, http.StatusNotFound, "No such release"},
				{"an unreadable release is not found either", "/releases/vault-1", alice, http.StatusNotFound, "No such release"},
				{"another user's release is not found", "/releases/shop-1", mallory, http.StatusNotFound, "No such release"},
			} {
				t.Run(c.name, func(t *testing.T) {
					w := get(t, mux, c.path, c.cookie)
					b := body(w)
					if w.Code != c.status || !strings.Contains(b, c.want) {
						t.Errorf("GET %s = %d, want %d with %q\n%s", c.path, w.Code, c.status, c.want, b)
					}
				})
			}
		})
		t.Run("a token GitHub refuses ends the session", func(t *testing.T) {
			w := get(t, mux, "/", sessionCookieFor(t, app, "alice", "tok-revoked"))
			cleared := false
			for _, c := range w.Result().Cookies() {
				cleared = cleared || (c.Name == sessionCookie && c.MaxAge < 0)
			}
			if b := body(w); !cleared || !strings.Contains(b, "Sign in with GitHub") || strings.Contains(b, "ghcr.io") {
				t.Errorf("GET / with a revoked token: cleared %v\n%s", cleared, b)
			}
		})
		t.Run("a Roll back form posted with a token GitHub refuses says to sign in again", func(t *testing.T) {
			revoked := sessionCookieFor(t, app, "alice", "tok-revoked")
			tok, err := csrfToken(app.ClientSecret, session{Login: "alice", Token: "tok-revoked", Expires: now.Add(time.Hour)}, rollbackAction("shop-3"))
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodPost, publicURL+"/releases/shop-3/rollback",
				strings.NewReader(url.Values{"csrf": {tok}, "reason": {"broken"}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.AddCookie(revoked)
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, req)
			cleared := false
			for _, c := range w.Result().Cookies() {
				cleared = cleared || (c.Name == sessionCookie && c.MaxAge < 0)
			}
			b := body(w)
			if w.Code != http.StatusForbidden || !cleared || !strings.Contains(b, "nothing was rolled back") ||
				!strings.Contains(b, `href="/login?next=%2Freleases%2Fshop-3"`) {
				t.Errorf("POST with a revoked token = %d, session cleared %v, want 403 saying to sign in again\n%s", w.Code, cleared, b)
			}
		})
		t.Run("not signed in sees no data", func(t *testing.T) {
			forged := &http.Cookie{Name: sessionCookie, Value: strings.Repeat("A", 80)}
			other, _ := newSealer("another-secret")
			foreign, _ := other.seal(sessionCookie, session{Login: "alice", Token: "tok-alice", Expires: now.Add(time.Hour)})
			for _, c := range []struct {
				name   string
				cookie []*http.Cookie
			}{
				{"no cookie", nil},
				{"a forged cookie", []*http.Cookie{forged}},
				{"a cookie sealed by another server", []*http.Cookie{{Name: sessionCookie, Value: foreign}}},
			} {
				for _, path := range []string{"/", "/releases/shop-1"} {
					w := get(t, mux, path, c.cookie...)
					b := body(w)
					if w.Code != http.StatusOK || !strings.Contains(b, "Sign in with GitHub") || strings.Contains(b, "ghcr.io") || strings.Contains(b, "production") {
						t.Errorf("%s: GET %s = %d\n%s", c.name, path, w.Code, b)
					}
				}
			}
		})
	})
}

func TestRootSendsToSetupUntilTheAppIsConfigured(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testdb.URL(t, "sqlite"))
	_, mux := newTestHandler(f, publicURL, "https://api.github.example/", func() pipeline.AppIdentity { return pipeline.AppIdentity{} }, newFakeGitHub(), now)
	w := get(t, mux, "/")
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/setup" {
		t.Errorf("GET / before set-up = %d to %q, want 303 to /setup", w.Code, w.Header().Get("Location"))
	}
	if w := get(t, mux, "/login"); w.Code != http.StatusServiceUnavailable {
		t.Errorf("GET /login without an OAuth client = %d, want 503", w.Code)
	}
}

// startSignIn does GET /login and returns the state cookie and the state
// sent to GitHub.
func startSignIn(t *testing.T, h http.Handler, next string) (*http.Cookie, string) {
	t.Helper()
	w := get(t, h, "/login?next="+url.QueryEscape(next))
	if w.Code != http.StatusFound {
		t.Fatalf("GET /login = %d", w.Code)
	}
	loc, err := url.Parse(w.Header().Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	q := loc.Query()
	if loc.Path != "/login/oauth/authorize" || q.Get("client_id") != "Iv1.test" || q.Get("redirect_uri") != publicURL+"/login/callback" || len(q.Get("state")) < 32 {
		t.Fatalf("GET /login sent the browser to %s", loc)
	}
	for _, c := range w.Result().Cookies() {
		if c.Name == stateCookie {
			if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode {
				t.Errorf("state cookie is not HttpOnly and SameSite=Lax: %+v", c)
			}
			return c, q.Get("state")
		}
	}
	t.Fatal("GET /login set no state cookie")
	return nil, ""
}

func sessionFrom(w *httptest.ResponseRecorder) *http.Cookie {
	for _, c := range w.Result().Cookies() {
		if c.Name == sessionCookie && c.MaxAge > 0 {
			return c
		}
	}
	return nil
}

func TestSignInCallback(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testdb.URL(t, "sqlite"))
	app := appWith("https://github.example/")
	h, mux := newTestHandler(f, publicURL, "https://api.github.example/", func() pipeline.AppIdentity { return app }, newFakeGitHub(), now)

	t.Run("the round trip signs alice in and returns to the page she asked for", func(t *testing.T) {
		cookie, state := startSignIn(t, mux, "/releases/shop-1")
		w := get(t, mux, "/login/callback?code=code-alice&state="+state, cookie)
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/releases/shop-1" {
			t.Fatalf("callback = %d to %q", w.Code, w.Header().Get("Location"))
		}
		c := sessionFrom(w)
		if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Secure {
			t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Lax, not Secure on http", c)
		}
		if ss, ok := h.signedIn(&http.Request{Header: http.Header{"Cookie": {c.String()}}}); !ok || ss.Login != "alice" {
			t.Errorf("the session cookie holds %+v", ss)
		}
	})
	t.Run("refused", func(t *testing.T) {
		cookie, state := startSignIn(t, mux, "/")
		other, _ := startSignIn(t, mux, "/")
		_, expiredMux := newTestHandler(f, publicURL, "", func() pipeline.AppIdentity { return app }, newFakeGitHub(), now.Add(stateLifetime))
		for _, c := range []struct {
			name   string
			h      http.Handler
			query  string
			cookie *http.Cookie
			status int
		}{
			{"a state that is not this browser's", mux, "code=code-alice&state=" + strings.Repeat("0", 64), cookie, http.StatusBadRequest},
			{"the state of another browser's sign-in", mux, "code=code-alice&state=" + state, other, http.StatusBadRequest},
			{"no state", mux, "code=code-alice", cookie, http.StatusBadRequest},
			{"no state cookie", mux, "code=code-alice&state=" + state, nil, http.StatusBadRequest},
			{"a sign-in that took too long", expiredMux, "code=code-alice&state=" + state, cookie, http.StatusBadRequest},
			{"the user declined on GitHub", mux, "error=access_denied&state=" + state, cookie, http.StatusForbidden},
			{"a code GitHub does not know", mux, "code=stolen&state=" + state, cookie, http.StatusBadRequest},
			{"GitHub cannot be reached", mux, "code=code-github-down&state=" + state, cookie, http.StatusBadGateway},
		} {
			t.Run(c.name, func(t *testing.T) {
				var cookies []*http.Cookie
				if c.cookie != nil {
					cookies = append(cookies, c.cookie)
				}
				w := get(t, c.h, "/login/callback?"+c.query, cookies...)
				if w.Code != c.status || sessionFrom(w) != nil {
					t.Errorf("callback = %d (session cookie %v), want %d and no session", w.Code, sessionFrom(w) != nil, c.status)
				}
			})
		}
	})
	// Go's http.Redirect cleans a path, so /./\evil.example became the
	// Location /\evil.example, which browsers read as the host
	// evil.example: a sign-in link that passed localPath sent the person
	// signing in to another site.
	t.Run("a return address never leaves the server, however it is spelled", func(t *testing.T) {
		for _, next := range []string{`/./\evil.example`, `/a/../\evil.example/x`, `/.\/evil.example`, "/.//evil.example", `/\/evil.example`} {
			cookie, state := startSignIn(t, mux, next)
			w := get(t, mux, "/login/callback?code=code-alice&state="+state, cookie)
			loc := w.Header().Get("Location")
			// Browsers read a backslash as a slash.
			if as := strings.ReplaceAll(loc, `\`, "/"); w.Code != http.StatusSeeOther || !strings.HasPrefix(as, "/") || strings.HasPrefix(as, "//") {
				t.Errorf("next=%q: callback = %d to %q, another host", next, w.Code, loc)
			}
		}
	})
	// A reloaded callback page sends a code GitHub took already: GitHub
	// answered, so the page must not say it did not, and signing in again
	// (back to the page asked for) is the way on.
	t.Run("a used code says to sign in again", func(t *testing.T) {
		cookie, state := startSignIn(t, mux, "/releases/shop-1")
		w := get(t, mux, "/login/callback?code=used&state="+state, cookie)
		b := body(w)
		if w.Code != http.StatusBadRequest || strings.Contains(b, "GitHub did not answer") ||
			!strings.Contains(b, `<a href="/login?next=%2Freleases%2Fshop-1">Sign in again</a>`) {
			t.Errorf("callback with a used code = %d\n%s", w.Code, b)
		}
	})
}

// Signing out takes a form with a token of the session, like the Roll back
// form: GET /logout only shows the button, so another site's
// <img src=".../logout"> or form cannot sign a person out.
func TestSignOut(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testdb.URL(t, "sqlite"))
	f.seedShop(t)
	app := appWith("https://github.example/")
	_, mux := newTestHandler(f, publicURL, "https://api.github.example/", func() pipeline.AppIdentity { return app }, newFakeGitHub(), now)
	alice := sessionCookieFor(t, app, "alice", "tok-alice")
	token := func(t *testing.T, page string) string {
		t.Helper()
		m := signOutForm.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no sign-out form with a token in\n%s", page)
		}
		return m[1]
	}

	t.Run("GET shows the button and signs no one out", func(t *testing.T) {
		w := get(t, mux, "/logout", alice)
		b := body(w)
		if w.Code != http.StatusOK || cleared(w) || !strings.Contains(b, `id="sign-out-button"`) {
			t.Fatalf("GET /logout = %d, cleared %v\n%s", w.Code, cleared(w), b)
		}
		token(t, b)
	})
	signOut := func(t *testing.T, tok string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, publicURL+"/logout", strings.NewReader(url.Values{"csrf": {tok}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(alice)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		return w
	}
	for _, c := range []struct{ name, tok string }{
		{"no token", ""},
		{"another session's token", mustToken(t, app, "bob", "tok-bob", "POST /logout")},
		{"a Roll back form's token", mustToken(t, app, "alice", "tok-alice", rollbackAction("shop-3"))},
	} {
		t.Run("POST with "+c.name+" is refused and says what to do", func(t *testing.T) {
			w := signOut(t, c.tok)
			b := body(w)
			if w.Code != http.StatusForbidden || cleared(w) || !strings.Contains(b, "use the Sign out button") {
				t.Errorf("POST /logout = %d, cleared %v\n%s", w.Code, cleared(w), b)
			}
		})
	}
	for _, from := range []string{"/logout", "/"} {
		t.Run("the form on "+from+" signs out", func(t *testing.T) {
			w := signOut(t, token(t, body(get(t, mux, from, alice))))
			if w.Code != http.StatusSeeOther || !cleared(w) {
				t.Errorf("POST /logout = %d, cleared %v", w.Code, cleared(w))
			}
		})
	}
}

// signOutForm finds a sign-out form's token on a page.
var signOutForm = regexp.MustCompile(`<form method="post" action="/logout">\s*<input type="hidden" name="csrf" value="([^"]+)">`)

// cleared reports whether the answer clears the session cookie.
func cleared(w *httptest.ResponseRecorder) bool {
	for _, c := range w.Result().Cookies() {
		if c.Name == sessionCookie && c.MaxAge < 0 {
			return true
		}
	}
	return false
}

// mustToken is the CSRF token of login's session (as sessionCookieFor
// seals it) for action.
func mustToken(t *testing.T, app pipeline.AppIdentity, login, token, action string) string {
	t.Helper()
	tok, err := csrfToken(app.ClientSecret, session{Login: login, Token: token, Expires: now.Add(time.Hour)}, action)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestSessionCookieIsSecureOnHTTPS(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testdb.URL(t, "sqlite"))
	app := appWith("https://github.example/")
	_, mux := newTestHandler(f, "https://ripcord.example", "", func() pipeline.AppIdentity { return app }, newFakeGitHub(), now)
	w := get(t, mux, "/login")
	for _, c := range w.Result().Cookies() {
		if c.Name == stateCookie && !c.Secure {
			t.Errorf("state cookie on an https public_url is not Secure")
		}
	}
}
