package setup_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
)

// env is a ripcord server started with no App, and the fake GitHub it
// registers one on.
type env struct {
	t      *testing.T
	gh     *githubtest.Server
	dbURL  string
	apiURL string
	key    []byte // secrets_key; nil: the key file beside the SQLite database
	url    string
	stop   func()
	// client does not follow redirects: the callback's redirect is checked.
	client *http.Client
	// configure changes the configuration of the next start.
	configure func(*config.Config)
	// logs is the log of the latest start; token the set-up token its
	// start-up line gives ("" when it gives none), read there as an admin
	// reads it.
	logs  *logBuffer
	token string
}

// logBuffer is a log the server writes while the test reads it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// setUpLink is the link to open in the start-up line of a server with no App.
var setUpLink = regexp.MustCompile(`register it at (http://\S+/setup\?token=([A-Za-z0-9_-]*))`)

func start(t *testing.T, dbURL string, ghes bool) *env {
	t.Helper()
	gh := githubtest.NewServer(t)
	e := &env{t: t, gh: gh, dbURL: dbURL, apiURL: gh.URL(), client: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if ghes {
		e.apiURL = gh.URL() + "api/v3/"
	}
	if !strings.HasPrefix(dbURL, "sqlite:") {
		// PostgreSQL: no key file in the package directory.
		e.key = bytes.Repeat([]byte{7}, 32)
	}
	e.run()
	t.Cleanup(e.halt)
	return e
}

func (e *env) run() {
	t := e.t
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.url = "http://" + ln.Addr().String()
	cfg := config.Defaults()
	cfg.Listen, cfg.Database, cfg.PublicURL, cfg.SecretsKey = ln.Addr().String(), e.dbURL, e.url, e.key
	cfg.GitHub = config.GitHub{APIURL: e.apiURL}
	cfg.OIDC.Audience = e.url
	if e.configure != nil {
		e.configure(cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.logs = &logBuffer{}
	srv, err := app.New(ctx, cfg, app.Options{Logger: slog.New(slog.NewTextHandler(e.logs, nil))})
	if err != nil {
		cancel()
		_ = ln.Close()
		t.Fatalf("start server: %v", err)
	}
	e.token = ""
	if m := setUpLink.FindStringSubmatch(e.logs.String()); m != nil {
		e.token = m[2]
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln) }()
	e.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server stopped with an error: %v", err)
		}
	}
}

func (e *env) halt() {
	if e.stop != nil {
		e.stop()
		e.stop = nil
	}
}

func (e *env) restart() {
	e.halt()
	e.run()
}

func (e *env) get(path string) (int, string, http.Header) {
	e.t.Helper()
	res, err := e.client.Get(e.url + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body), res.Header
}

// setupPage is /setup with the set-up token of the start-up log, and query
// ("a=b&c=d") if any.
func (e *env) setupPage(query string) string {
	p := "/setup?token=" + url.QueryEscape(e.token)
	if query != "" {
		p += "&" + query
	}
	return p
}

var (
	orgFormPattern = regexp.MustCompile(`(?s)<form method="get" action="([^"]+)">(.*?)</form>`)
	hiddenPattern  = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
)

// orgForm is the address the set-up page's organisation form sends a
// browser to with org typed in: its action with its hidden fields and org.
func orgForm(t *testing.T, page, org string) string {
	t.Helper()
	m := orgFormPattern.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the set-up page has no organisation form:\n%s", page)
	}
	q := url.Values{}
	for _, h := range hiddenPattern.FindAllStringSubmatch(m[2], -1) {
		q.Add(html.UnescapeString(h[1]), html.UnescapeString(h[2]))
	}
	q.Add("org", org)
	return html.UnescapeString(m[1]) + "?" + q.Encode()
}

// form is one "Register on GitHub" form of the set-up page.
type form struct {
	Action   string
	Manifest map[string]any
}

var formPattern = regexp.MustCompile(`<form method="post" action="([^"]+)"[^>]*>\s*<input type="hidden" name="manifest" value="([^"]+)">`)

func forms(t *testing.T, page string) []form {
	t.Helper()
	var out []form
	for _, m := range formPattern.FindAllStringSubmatch(page, -1) {
		f := form{Action: html.UnescapeString(m[1])}
		if err := json.Unmarshal([]byte(html.UnescapeString(m[2])), &f.Manifest); err != nil {
			t.Fatalf("manifest is not JSON: %v\n%s", err, m[2])
		}
		out = append(out, f)
	}
	return out
}

// state is the state= of a form's action.
func (f form) state() string {
	_, s, _ := strings.Cut(f.Action, "?state=")
	return s
}

// deliver sends a push that changes .github/ripcord.yml, signed with
// secret, and returns the status ripcord answers.
func (e *env) deliver(secret string) int {
	e.t.Helper()
	var m map[string]any
	if err := json.Unmarshal(githubtest.LoadPayload(e.t, "push", "payload.json"), &m); err != nil {
		e.t.Fatal(err)
	}
	sha := e.gh.PutFile("octo-org/shop", "main", ".github/ripcord.yml", "version: 1\n")
	m["installation"] = map[string]any{"id": githubtest.InstallationID}
	m["after"], m["deleted"], m["ref"] = sha, false, "refs/heads/main"
	repo := m["repository"].(map[string]any)
	repo["full_name"], repo["name"] = "octo-org/shop", "shop"
	m["commits"] = []any{map[string]any{"id": sha, "message": "config", "added": []any{}, "removed": []any{},
		"modified": []any{".github/ripcord.yml"}, "timestamp": time.Now().UTC().Format(time.RFC3339),
		"url": "https://github.com/octo-org/shop/commit/" + sha, "distinct": true, "tree_id": sha,
		"author":    map[string]any{"name": "octocat", "email": "octocat@example.com"},
		"committer": map[string]any{"name": "octocat", "email": "octocat@example.com"}}}
	body, _ := json.Marshal(m)
	res, err := http.DefaultClient.Do(githubtest.NewDelivery(e.t, e.url+"/api/github/hook", secret, "push", body))
	if err != nil {
		e.t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// jwtIssuer is the iss claim of the App JWT in an Authorization header.
func jwtIssuer(t *testing.T, authorization string) string {
	t.Helper()
	parts := strings.Split(strings.TrimPrefix(authorization, "Bearer "), ".")
	if len(parts) != 3 {
		t.Fatalf("Authorization %q is not a JWT", authorization)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Iss any `json:"iss"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(claims.Iss)
	return strings.Trim(string(b), `"`)
}

// row reads the stored App's sealed columns as the database holds them.
func (e *env) row() (key, hook, secret []byte) {
	e.t.Helper()
	db, err := store.Open(context.Background(), e.dbURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	if err := db.Read.QueryRow(`SELECT private_key, webhook_secret, client_secret FROM app_credentials`).Scan(&key, &hook, &secret); err != nil {
		e.t.Fatal(err)
	}
	return key, hook, secret
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
