package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/oidcauth/oidctest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// factServer is a server with two clusters, a loopback OIDC issuer and the
// App installed on acme/checkout.
func factServer(t *testing.T, dbURL string, tweak func(o *Options)) (*testServer, *oidctest.Issuer) {
	t.Helper()
	issuer := oidctest.NewIssuer(t)
	opts := Options{}
	if tweak != nil {
		tweak(&opts)
	}
	ts := startServerWith(t, dbURL, opts, func(c *configT) {
		c.Clusters = tokensOf(map[string]string{"prod-eu": "tok-eu", "prod-us": "tok-us"})
		c.OIDC.Issuer, c.OIDC.Audience = issuer.URL(), oidctest.Audience
	})
	ts.install(t, "acme/checkout")
	return ts, issuer
}

func (ts *testServer) install(t *testing.T, repo string) {
	t.Helper()
	if _, err := ts.db.Write.Exec(`INSERT INTO installations (id, account, account_type, suspended, created_at, updated_at)
		VALUES (7, 'acme', 'Organization', false, 1, 1) ON CONFLICT (id) DO NOTHING`); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.db.Write.Exec(`INSERT INTO installation_repositories (installation_id, repository, repository_id, added_at)
		VALUES (7, $1, 1, 1)`, repo); err != nil {
		t.Fatal(err)
	}
}

// post sends a JSON body with a bearer token and decodes the answer.
func (ts *testServer) post(t *testing.T, path, token string, body any, out any) int {
	t.Helper()
	var b []byte
	switch v := body.(type) {
	case string:
		b = []byte(v)
	default:
		b, _ = json.Marshal(v)
	}
	req, _ := http.NewRequest(http.MethodPost, ts.URL+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("POST %s: %d %s: %v", path, resp.StatusCode, data, err)
		}
	}
	return resp.StatusCode
}

func clusterFact(phase string, gen int, release, image string) map[string]any {
	return map[string]any{"source": "rollout", "cluster": "prod-eu", "namespace": "shop", "name": "checkout",
		"uid": "6f1c-uid", "generation": gen, "observed_generation": gen, "phase": phase, "step": 0, "step_count": 3,
		"pod_hash": fmt.Sprintf("hash-%d", gen), "abort": false, "images": []string{image}, "release_id": release,
		"observed_at": time.Now().UTC().Format(time.RFC3339Nano)}
}

const (
	imageV1 = "registry.example/shop/checkout@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	imageV2 = "registry.example/shop/checkout@sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

func openRelease(t *testing.T, ts *testServer, id, image string) {
	t.Helper()
	body := map[string]any{"release_id": id, "app": "checkout", "environment": "prod", "cluster": "prod-eu",
		"repository": "acme/checkout", "image": image}
	if code := ts.post(t, "/api/v1/releases", testToken, body, nil); code != http.StatusCreated {
		t.Fatalf("open release %s: status %d", id, code)
	}
}

func TestClusterFactsAuth(t *testing.T) {
	t.Parallel()
	ts, _ := factServer(t, testdb.MigratedURL(t, "sqlite"), nil)
	fact := clusterFact("Progressing", 1, "r1", imageV1)
	cases := []struct {
		name, path, token string
		body              any
		want              int
	}{
		{"no token", "/api/v1/facts/prod-eu", "", fact, 401},
		{"a token of no cluster", "/api/v1/facts/prod-eu", "nope", fact, 401},
		{"the api token is not a cluster token", "/api/v1/facts/prod-eu", testToken, fact, 401},
		{"another cluster's token", "/api/v1/facts/prod-eu", "tok-us", fact, 403},
		{"body names another cluster than the path", "/api/v1/facts/prod-us", "tok-us", fact, 403},
	}
	for _, c := range cases {
		var e apiError
		if code := ts.post(t, c.path, c.token, c.body, &e); code != c.want {
			t.Errorf("%s: status %d (%s), want %d", c.name, code, e.Error, c.want)
		}
	}
	var audit struct{ Events []map[string]any }
	ts.api(t, "/api/v1/audit", &audit)
	if len(audit.Events) != 0 {
		t.Errorf("refused facts wrote %d audit events", len(audit.Events))
	}
}

func TestClusterFactWithoutClusterTakesThePaths(t *testing.T) {
	t.Parallel()
	ts, _ := factServer(t, testdb.MigratedURL(t, "sqlite"), nil)
	openRelease(t, ts, "r1", imageV1)
	f := clusterFact("Progressing", 1, "r1", imageV1)
	delete(f, "cluster") // the path and the token name it
	var res struct{ Outcome, State string }
	if code := ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", f, &res); code != 200 || res.Outcome != "applied" || res.State != "progressing" {
		t.Errorf("status %d %+v, want 200, applied to r1 in prod-eu, progressing", code, res)
	}
}

func TestFactsBadInputNamesTheField(t *testing.T) {
	t.Parallel()
	ts, _ := factServer(t, testdb.MigratedURL(t, "sqlite"), nil)
	good := clusterFact("Progressing", 1, "r1", imageV1)
	wrongType := clusterFact("Progressing", 1, "r1", imageV1)
	wrongType["generation"] = "seven"
	unknown := clusterFact("Progressing", 1, "r1", imageV1)
	unknown["colour"] = "blue"
	noPhase := clusterFact("", 1, "r1", imageV1)
	cases := []struct {
		name      string
		body      any
		wantField string
	}{
		{"not JSON", `{"source": "rollout",`, ""},
		{"a number where a string goes", wrongType, "generation"},
		{"an unknown field", unknown, "colour"},
		{"a required field missing", noPhase, "phase"},
		{"the second fact of a batch is bad", map[string]any{"facts": []any{good, unknown}}, "facts[1].colour"},
	}
	for _, c := range cases {
		var e apiError
		code := ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", c.body, &e)
		if code != 400 || e.Field != c.wantField {
			t.Errorf("%s: status %d field %q (%s), want 400 naming %q", c.name, code, e.Field, e.Error, c.wantField)
		}
	}
	var audit struct{ Events []map[string]any }
	ts.api(t, "/api/v1/audit", &audit)
	if len(audit.Events) != 0 {
		t.Errorf("a refused batch half-applied: %d audit events", len(audit.Events))
	}
}

func TestTaskFactsNeedAWorkflowTokenOfThatRepository(t *testing.T) {
	t.Parallel()
	ts, issuer := factServer(t, testdb.MigratedURL(t, "sqlite"), nil)
	fact := map[string]any{"source": "task", "repository": "acme/checkout", "workflow_run_id": 42, "run_attempt": 1,
		"status": "in_progress", "app": "checkout", "environment": "prod", "cluster": "prod-eu", "version": "v1",
		"release_id": "r-task", "observed_at": time.Now().UTC().Format(time.RFC3339)}
	other := map[string]any{}
	for k, v := range fact {
		other[k] = v
	}
	other["repository"] = "acme/payments"
	cases := []struct {
		name  string
		token string
		body  any
		want  int
	}{
		{"wrong audience", issuer.Token(t, nil, oidctest.WithAudience("https://elsewhere")), fact, 401},
		{"wrong issuer", issuer.Token(t, nil, oidctest.WithIssuer("https://token.example")), fact, 401},
		{"expired", issuer.Token(t, nil, oidctest.WithExpiry(time.Now().Add(-10*time.Minute))), fact, 401},
		{"a fact for another repository", issuer.Token(t, nil), other, 403},
		{"a repository the App is not installed on", issuer.Token(t, map[string]any{"repository": "acme/payments"}), other, 403},
		{"valid", issuer.Token(t, nil), fact, 200},
	}
	for _, c := range cases {
		var res map[string]any
		if code := ts.post(t, "/api/v1/facts", c.token, c.body, &res); code != c.want {
			t.Errorf("%s: status %d (%v), want %d", c.name, code, res, c.want)
		}
	}
	var rec map[string]any
	if code := ts.api(t, "/api/v1/releases/r-task", &rec); code != 200 || rec["state"] != "progressing" {
		t.Errorf("an in_progress task fact for an unknown release should open it: %d %v", code, rec)
	}
}

// A refused workflow token or repository is answered with what to do about
// it: the workflow author reads the answer in the action's warning.
func TestRefusedTaskFactsSayWhatToDo(t *testing.T) {
	t.Parallel()
	ts, issuer := factServer(t, testdb.MigratedURL(t, "sqlite"), nil)
	fact := map[string]any{"source": "task", "repository": "acme/payments", "workflow_run_id": 42, "run_attempt": 1,
		"status": "in_progress", "app": "payments", "environment": "prod", "cluster": "prod-eu", "version": "v1",
		"release_id": "r-advice", "observed_at": time.Now().UTC().Format(time.RFC3339)}
	payments := map[string]any{"repository": "acme/payments"}
	cases := []struct {
		name  string
		token string
		code  int
		field string
		want  []string
	}{
		{"a token for the server URL the workflow used, not ripcord's audience",
			issuer.Token(t, payments, oidctest.WithAudience("http://localhost:8080")), 401, "",
			[]string{`does not include ripcord's audience "` + oidctest.Audience + `"`,
				`request the token for audience "` + oidctest.Audience + `"`, "action's audience input", "set ripcord's oidc.audience"}},
		{"a token of another GitHub", issuer.Token(t, payments, oidctest.WithIssuer("https://ghes.example/_services/token")), 401, "",
			[]string{"ripcord's oidc.issuer must be", "https://HOST/_services/token on GitHub Enterprise Server"}},
		{"a token that expired", issuer.Token(t, payments, oidctest.WithExpiry(time.Now().Add(-10*time.Minute))), 401, "",
			[]string{"token expired", "clocks", "(NTP)"}},
		{"a repository the App is not installed on", issuer.Token(t, payments), 403, "repository",
			[]string{"the ripcord App is not installed on acme/payments: install it there", "then post again"}},
	}
	for _, c := range cases {
		var e apiError
		code := ts.post(t, "/api/v1/facts", c.token, fact, &e)
		if code != c.code || e.Field != c.field {
			t.Errorf("%s: %d %q (%s), want %d naming %q", c.name, code, e.Field, e.Error, c.code, c.field)
		}
		for _, w := range c.want {
			if !strings.Contains(e.Error, w) {
				t.Errorf("%s: answer %q does not say %q", c.name, e.Error, w)
			}
		}
	}
}
