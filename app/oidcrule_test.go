package app

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/oidcauth/oidctest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// prodRule restricts prod to main and release tags in the production
// GitHub Environment; staging has no rule.
const prodRule = `version: 1
apps:
  checkout:
    environments:
      staging: {cluster: staging-eu}
      prod:
        cluster: prod-eu
        oidc:
          refs: [refs/heads/main, "refs/tags/v*"]
          environments: [production]
`

// ruleServer is factServer with a GitHub App on the fake GitHub, so the
// server reads acme/checkout's .github/ripcord.yml as it does in production.
func ruleServer(t *testing.T, dbURL string) (*testServer, *oidctest.Issuer, *githubtest.Server) {
	t.Helper()
	issuer := oidctest.NewIssuer(t)
	gh := githubtest.NewServer(t)
	ts := startServerWith(t, dbURL, Options{}, func(c *configT) {
		c.Clusters = tokensOf(map[string]string{"prod-eu": "tok-eu", "staging-eu": "tok-st"})
		c.OIDC.Issuer, c.OIDC.Audience = issuer.URL(), oidctest.Audience
		c.GitHub = config.GitHub{AppID: githubtest.AppID, PrivateKey: githubtest.AppPrivateKey(t),
			WebhookSecrets: []string{testSecret}, APIURL: gh.URL()}
	})
	ts.install(t, "acme/checkout")
	return ts, issuer, gh
}

// workflowToken is a token of an acme/checkout job on ref, in the GitHub
// Environment ghEnv ("" for a job without one).
func workflowToken(t *testing.T, issuer *oidctest.Issuer, ref, ghEnv string) string {
	t.Helper()
	claims := map[string]any{"ref": ref, "sub": "repo:acme/checkout:ref:" + ref}
	if ghEnv != "" {
		claims["environment"] = ghEnv
		claims["sub"] = "repo:acme/checkout:environment:" + ghEnv
	}
	return issuer.Token(t, claims)
}

func taskFact(env, release, status string) map[string]any {
	return map[string]any{"source": "task", "repository": "acme/checkout", "workflow_run_id": 42, "run_attempt": 1,
		"status": status, "app": "checkout", "environment": env, "cluster": env + "-eu", "version": "v1",
		"release_id": release, "observed_at": time.Now().UTC().Format(time.RFC3339)}
}

func releaseBody(env, id string) map[string]any {
	return map[string]any{"release_id": id, "app": "checkout", "environment": env, "cluster": env + "-eu",
		"repository": "acme/checkout", "image": imageV1}
}

type refusal struct{ Error, Field string }

// An environment's oidc rule (docs/ripcord-yml.md) decides which
// workflows of the repository may post for it: a feature branch cannot
// fail prod (and so start its recovery) or open a prod release, while it
// still posts for staging, which has no rule; main in the production
// GitHub Environment posts for prod; the api_token is not restricted.
func TestOIDCRuleDecidesWhichWorkflowsPostForAnEnvironment(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts, issuer, gh := ruleServer(t, dbURL)
		gh.PutFile("acme/checkout", "main", ".github/ripcord.yml", prodRule)
		feature := workflowToken(t, issuer, "refs/heads/feature", "production")
		mainProd := workflowToken(t, issuer, "refs/heads/main", "production")
		mainNoEnv := workflowToken(t, issuer, "refs/heads/main", "")
		stored := func(id string) bool { return ts.api(t, "/api/v1/releases/"+url.PathEscape(id), nil) == http.StatusOK }

		refused := []struct {
			name, path, token string
			body              map[string]any
			key, claim        string
			id                string
		}{
			{"a feature branch's failed fact for prod", "/api/v1/facts", feature, taskFact("prod", "evil-fact", "failed"),
				"apps.checkout.environments.prod.oidc.refs", `the token's ref claim is "refs/heads/feature"`, "evil-fact"},
			{"a feature branch's prod release", "/api/v1/releases", feature, releaseBody("prod", "evil-release"),
				"apps.checkout.environments.prod.oidc.refs", `the token's ref claim is "refs/heads/feature"`, "evil-release"},
			{"main from a job outside the production environment", "/api/v1/facts", mainNoEnv, taskFact("prod", "no-env", "in_progress"),
				"apps.checkout.environments.prod.oidc.environments", "the token has no environment claim", "no-env"},
		}
		for _, c := range refused {
			var got refusal
			code := ts.post(t, c.path, c.token, c.body, &got)
			if code != http.StatusForbidden || got.Field != c.key || !strings.Contains(got.Error, c.claim) || !strings.Contains(got.Error, c.key) {
				t.Errorf("%s: %d %+v; want 403 on %s saying %q", c.name, code, got, c.key, c.claim)
			}
			if stored(c.id) {
				t.Errorf("%s: release %s was stored", c.name, c.id)
			}
		}

		if code := ts.post(t, "/api/v1/facts", feature, taskFact("staging", "st-1", "in_progress"), nil); code != http.StatusOK {
			t.Errorf("a feature branch's fact for staging, which has no rule: status %d, want 200", code)
		}
		if code := ts.post(t, "/api/v1/facts", mainProd, taskFact("prod", "prod-1", "in_progress"), nil); code != http.StatusOK {
			t.Errorf("main in production posting for prod: status %d, want 200", code)
		}
		if code := ts.post(t, "/api/v1/releases", mainProd, releaseBody("prod", "prod-2"), nil); code != http.StatusCreated {
			t.Errorf("main in production opening a prod release: status %d, want 201", code)
		}
		if code := ts.post(t, "/api/v1/releases", testToken, releaseBody("prod", "prod-3"), nil); code != http.StatusCreated {
			t.Errorf("the api_token opening a prod release: status %d, want 201 (never restricted)", code)
		}

		// A fact that says staging but names prod's release would be
		// ignored, leaving its mark in prod's timeline: refused too.
		timeline := func() int {
			var audit struct{ Events []map[string]any }
			ts.api(t, "/api/v1/releases/prod-1/audit", &audit)
			return len(audit.Events)
		}
		before := timeline()
		var got refusal
		code := ts.post(t, "/api/v1/facts", feature, map[string]any{"facts": []any{
			taskFact("staging", "st-1", "success"), taskFact("staging", "prod-1", "failed")}}, &got)
		if code != http.StatusForbidden || got.Field != "apps.checkout.environments.prod.oidc.refs" || !strings.HasPrefix(got.Error, "facts[1]: ") {
			t.Errorf("a feature branch's batch naming prod's release: %d %+v; want 403 on prod's rule, at facts[1]", code, got)
		}
		if after := timeline(); after != before || before == 0 {
			t.Errorf("prod-1's timeline went from %d to %d events with the refused batch", before, after)
		}
		var st struct{ State string }
		ts.api(t, "/api/v1/releases/st-1", &st)
		if st.State == "healthy" {
			t.Error("the refused batch's first fact was applied: a batch is refused whole")
		}
	})
}

// Without a rule nothing changes: a repository with no .github/ripcord.yml
// (nor its organisation's), or one whose file sets no oidc rule, takes a
// feature branch's facts and releases for prod, as before rules existed.
func TestWithoutAnOIDCRuleAnyWorkflowOfTheRepositoryPosts(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts, issuer, gh := ruleServer(t, dbURL)
		feature := workflowToken(t, issuer, "refs/heads/feature", "")
		if code := ts.post(t, "/api/v1/facts", feature, taskFact("prod", "nofile-1", "failed"), nil); code != http.StatusOK {
			t.Errorf("no .github/ripcord.yml: fact status %d, want 200", code)
		}
		if code := ts.post(t, "/api/v1/releases", feature, releaseBody("prod", "nofile-2"), nil); code != http.StatusCreated {
			t.Errorf("no .github/ripcord.yml: release status %d, want 201", code)
		}
		gh.PutFile("acme/checkout", "main", ".github/ripcord.yml", "version: 1\napps:\n  checkout:\n    environments:\n      prod: {cluster: prod-eu}\n")
		if code := ts.post(t, "/api/v1/facts", feature, taskFact("prod", "norule-1", "failed"), nil); code != http.StatusOK {
			t.Errorf("a file without a rule: fact status %d, want 200", code)
		}
		if code := ts.post(t, "/api/v1/releases", feature, releaseBody("prod", "norule-2"), nil); code != http.StatusCreated {
			t.Errorf("a file without a rule: release status %d, want 201", code)
		}
	})
}

// A rule that cannot be checked holds all the same: while the file does
// not load (it may hold a rule) a workflow's token is refused on the key
// to fix, and while GitHub cannot be read it is 503, nothing stored. The
// api_token still opens releases.
func TestAnOIDCRuleThatCannotBeCheckedRefusesWorkflows(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts, issuer, gh := ruleServer(t, dbURL)
		mainProd := workflowToken(t, issuer, "refs/heads/main", "production")
		gh.PutFile("acme/checkout", "main", ".github/ripcord.yml", prodRule+"        rollback: {mode: teleport}\n")
		var got refusal
		code := ts.post(t, "/api/v1/facts", mainProd, taskFact("prod", "broken-1", "failed"), &got)
		if code != http.StatusUnprocessableEntity || got.Field != "apps.checkout.environments.prod.rollback.mode" || !strings.Contains(got.Error, "oidc") {
			t.Errorf("a file that does not load: %d %+v; want 422 on its first problem's key, saying why", code, got)
		}
		if code := ts.post(t, "/api/v1/releases", testToken, releaseBody("prod", "broken-2"), nil); code != http.StatusCreated {
			t.Errorf("the api_token while the file does not load: status %d, want 201", code)
		}

		gh.Handle("GET /repos/{owner}/{repo}/contents/{path}", func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
			w.WriteHeader(http.StatusBadGateway)
		})
		got = refusal{}
		code = ts.post(t, "/api/v1/releases", mainProd, releaseBody("prod", "outage-1"), &got)
		if code != http.StatusServiceUnavailable || !strings.Contains(got.Error, "retry later") {
			t.Errorf("GitHub not answering: %d %+v; want 503", code, got)
		}
		for _, id := range []string{"broken-1", "outage-1"} {
			if ts.api(t, "/api/v1/releases/"+id, nil) != http.StatusNotFound {
				t.Errorf("release %s was stored", id)
			}
		}
	})
}

// The organisation's .github repository stands in for a repository with no
// file of its own (README, "In your repositories"), rule included.
func TestTheOrganisationsOIDCRuleHoldsForARepositoryWithoutAFile(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts, issuer, gh := ruleServer(t, dbURL)
		gh.PutFile("acme/.github", "main", ".github/ripcord.yml", prodRule)
		var got refusal
		code := ts.post(t, "/api/v1/facts", workflowToken(t, issuer, "refs/heads/feature", "production"), taskFact("prod", "org-1", "failed"), &got)
		if code != http.StatusForbidden || got.Field != "apps.checkout.environments.prod.oidc.refs" {
			t.Errorf("a feature branch under the organisation's rule: %d %+v, want 403 on its refs", code, got)
		}
		if code := ts.post(t, "/api/v1/facts", workflowToken(t, issuer, "refs/tags/v1.2.0", "production"), taskFact("prod", "org-2", "failed"), nil); code != http.StatusOK {
			t.Errorf("a release tag under the organisation's rule: status %d, want 200", code)
		}
	})
}
