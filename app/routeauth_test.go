package app

import (
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/setup"
	"github.com/ripcord/ripcord/internal/oidcauth/oidctest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// credential is what a request to a guarded route carries.
type credential string

const (
	noCredential     credential = "none"
	wrongBearer      credential = "a bearer that is no one's"
	apiTokenBearer   credential = "the api_token"
	clusterBearer    credential = "prod-eu's cluster token"
	otherClusterBear credential = "prod-us's cluster token"
	oidcBearer       credential = "a GitHub Actions OIDC token"
)

// guardedRoute is one route of the server that must refuse a request
// without its credential, and which credentials it refuses with what.
type guardedRoute struct {
	pattern string // as registered on the mux
	path    string // a path the pattern matches
	refuses map[credential]int
}

func refusing(status int, creds ...credential) map[credential]int {
	m := map[credential]int{}
	for _, c := range creds {
		m[c] = status
	}
	return m
}

func merge(ms ...map[credential]int) map[credential]int {
	out := map[credential]int{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

var (
	// apiTokenOnly routes take the api_token and nothing else.
	apiTokenOnly = refusing(http.StatusUnauthorized, noCredential, wrongBearer, clusterBearer, oidcBearer)
	// oidcOnly routes take a workflow's OIDC token and nothing else.
	oidcOnly = refusing(http.StatusUnauthorized, noCredential, wrongBearer, clusterBearer, apiTokenBearer)
	// clusterOnly routes (prod-eu's) take that cluster's token; another
	// cluster's is a 403, as README's API table says.
	clusterOnly = merge(refusing(http.StatusUnauthorized, noCredential, wrongBearer, apiTokenBearer, oidcBearer),
		refusing(http.StatusForbidden, otherClusterBear))
)

// guardedRoutes are every route that needs a credential. README's API
// table says which; TestEveryRouteIsGuardedOrKnownOpen keeps this list
// complete.
var guardedRoutes = []guardedRoute{
	{"POST /api/github/hook", "/api/github/hook", refusing(http.StatusUnauthorized, noCredential, wrongBearer, apiTokenBearer)},
	{"GET /api/v1/deliveries", "/api/v1/deliveries", apiTokenOnly},
	{"GET /api/v1/deliveries/{id}", "/api/v1/deliveries/d1", apiTokenOnly},
	{"POST /api/v1/facts", "/api/v1/facts", oidcOnly},
	{"POST /api/v1/facts/{cluster}", "/api/v1/facts/prod-eu", clusterOnly},
	{"POST /api/v1/facts/{cluster}/inventory", "/api/v1/facts/prod-eu/inventory", clusterOnly},
	{"POST /api/v1/releases", "/api/v1/releases", refusing(http.StatusUnauthorized, noCredential, wrongBearer, clusterBearer)},
	{"GET /api/v1/releases", "/api/v1/releases", apiTokenOnly},
	{"GET /api/v1/releases/{id}", "/api/v1/releases/r1", apiTokenOnly},
	{"GET /api/v1/releases/{id}/audit", "/api/v1/releases/r1/audit", apiTokenOnly},
	{"GET /api/v1/releases/{id}/deployment", "/api/v1/releases/r1/deployment", apiTokenOnly},
	{"GET /api/v1/audit", "/api/v1/audit", apiTokenOnly},
	{"GET /api/v1/eligibility", "/api/v1/eligibility", apiTokenOnly},
	{"POST /api/v1/rollbacks", "/api/v1/rollbacks", apiTokenOnly},
	{"POST /api/v1/validate", "/api/v1/validate", apiTokenOnly},
	{"GET /api/v1/rollouts", "/api/v1/rollouts", apiTokenOnly},
	{"POST /api/v1/rollouts", "/api/v1/rollouts", apiTokenOnly},
	{"GET /api/v1/rollouts/{id}", "/api/v1/rollouts/ro1", apiTokenOnly},
	{"POST /api/v1/rollouts/{id}/approve", "/api/v1/rollouts/ro1/approve", apiTokenOnly},
	{"POST /api/v1/rollouts/{id}/abort", "/api/v1/rollouts/ro1/abort", apiTokenOnly},
	{"POST /api/v1/rollouts/{id}/probes", "/api/v1/rollouts/ro1/probes", oidcOnly},
	{"GET /api/v1/clusters/{cluster}/actions", "/api/v1/clusters/prod-eu/actions", clusterOnly},
	{"POST /api/v1/clusters/{cluster}/actions/{id}", "/api/v1/clusters/prod-eu/actions/a1", clusterOnly},
	// The pages' Roll back button needs a GitHub sign-in (none of the API's
	// bearers): without one it answers 403 "Signed out" whatever the id, so
	// a release's existence is not told either. Its CSRF token is checked
	// in webui's TestRollbackForm.
	{"POST /releases/{id}/rollback", "/releases/r1/rollback",
		refusing(http.StatusForbidden, noCredential, wrongBearer, apiTokenBearer, clusterBearer, oidcBearer)},
}

// openRoutes answer without a credential, on purpose: probes and metrics
// for the platform, the pages' sign-in (a page itself shows nothing
// without one), and /setup, which until an App is configured checks the
// set-up token of the start-up log itself (app/setup's tests; README,
// "Register the App").
var openRoutes = map[string]string{
	"GET /healthz":              "/healthz",
	"GET /readyz":               "/readyz",
	"GET /metrics":              "/metrics",
	"GET /":                     "/nothing-here",
	"GET /{$}":                  "/",
	"GET /releases/{id}":        "/releases/r1",
	"GET /login":                "/login",
	"GET /login/callback":       "/login/callback",
	"GET /logout":               "/logout",
	"POST /logout":              "/logout",
	"GET " + setup.PagePath:     setup.PagePath,
	"GET " + setup.CallbackPath: setup.CallbackPath,
}

func authServer(t *testing.T, logs io.Writer) (*testServer, map[credential]string) {
	t.Helper()
	issuer := oidctest.NewIssuer(t)
	ts := startServerWith(t, testdb.MigratedURL(t, "sqlite"),
		Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))},
		func(c *configT) {
			c.Clusters = tokensOf(map[string]string{"prod-eu": "tok-eu-secret", "prod-us": "tok-us-secret"})
			c.OIDC.Issuer, c.OIDC.Audience = issuer.URL(), oidctest.Audience
		})
	return ts, map[credential]string{
		noCredential:     "",
		wrongBearer:      "Bearer not-a-token-of-anyone",
		apiTokenBearer:   "Bearer " + testToken,
		clusterBearer:    "Bearer tok-eu-secret",
		otherClusterBear: "Bearer tok-us-secret",
		oidcBearer:       "Bearer " + issuer.Token(t, map[string]any{"repository": "acme/checkout"}),
	}
}

// Every guarded route refuses every credential that is not its own, before
// it reads the body or looks anything up, and the answer never repeats the
// credential sent; nor does the log.
func TestEveryGuardedRouteRefusesOtherCredentials(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	ts, auth := authServer(t, logs)
	for _, rt := range guardedRoutes {
		method, _, _ := strings.Cut(rt.pattern, " ")
		for cred, want := range rt.refuses {
			t.Run(rt.pattern+" with "+string(cred), func(t *testing.T) {
				req, _ := http.NewRequest(method, ts.URL+rt.path, strings.NewReader(`{}`))
				req.Header.Set("Content-Type", "application/json")
				if auth[cred] != "" {
					req.Header.Set("Authorization", auth[cred])
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("status %d, want %d: %s", resp.StatusCode, want, body)
				}
				if tok, _ := strings.CutPrefix(auth[cred], "Bearer "); tok != "" && strings.Contains(string(body), tok) {
					t.Errorf("the answer repeats the credential sent: %s", body)
				}
			})
		}
	}
	for cred, a := range auth {
		if tok, _ := strings.CutPrefix(a, "Bearer "); tok != "" && strings.Contains(logs.String(), tok) {
			t.Errorf("the log holds %s:\n%s", cred, logs.String())
		}
	}
}

// registration finds `Handle("METHOD /path"` and `HandleFunc(…)` in the
// server's own code (not the fakes of internal/githubtest).
var registration = regexp.MustCompile(`\.Handle(?:Func)?\("([A-Z]+ /[^"]*)"`)

// The lists above are the server's routes, all of them: a route added
// without a place in them fails here, so its credential is decided and
// tested, not forgotten. Each listed pattern is also the one the mux
// picks for its path, so the lists cannot drift from the routes.
func TestEveryRouteIsGuardedOrKnownOpen(t *testing.T) {
	t.Parallel()
	ts, _ := authServer(t, io.Discard)
	listed := map[string]string{}
	for _, rt := range guardedRoutes {
		listed[rt.pattern] = rt.path
	}
	for p, path := range openRoutes {
		listed[p] = path
	}
	found := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range registration.FindAllStringSubmatch(string(src), -1) {
			found[m[1]] = true
			if _, ok := listed[m[1]]; !ok {
				t.Errorf("%s registers %q, which is neither in guardedRoutes nor in openRoutes", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pattern, path := range listed {
		// /setup's patterns are built from its path constants.
		if !found[pattern] && !strings.Contains(pattern, setup.PagePath) {
			t.Errorf("%q is listed but no code registers it (the search found %d routes)", pattern, len(found))
		}
		method, _, _ := strings.Cut(pattern, " ")
		req, _ := http.NewRequest(method, ts.URL+path, nil)
		if _, got := ts.mux.Handler(req); got != pattern {
			t.Errorf("%s %s goes to %q, want %q", method, path, got, pattern)
		}
	}
}
