package rolloutflow_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/rollout"
)

// probeRuleConfig rolls checkout out to staging and prod, one host each,
// read every few seconds by probes the runners send; prod's oidc rule
// takes main in the production GitHub Environment only. The interval is
// how long a reading waits for the runners' results: long enough for a
// test's few posts on a busy machine, short enough for a second reading.
func probeRuleConfig(rule string) string {
	env := func(name, host, rule string) string {
		return fmt.Sprintf(`      %[1]s:
        cluster: %[1]s-eu
%[3]s        targets:
          - {host: %[2]s, labels: {region: eu-1, az: eu-1a}}
        rollout:
          waves:
            - {name: all, select: "region=eu-1", bake: 10m}
          health:
            interval: 4s
            probes:
              - {url: "http://{host}/healthz"}
`, name, host, rule)
	}
	return "version: 1\napps:\n  checkout:\n    environments:\n" + env("staging", "st1-a-01", "") + env("prod", "eu1-a-01", rule)
}

const prodProbeRule = `        oidc:
          refs: [refs/heads/main]
          environments: [production]
`

// probeScene is a server whose staging and prod rollouts of checkout
// await their runners' probes.
type probeScene struct {
	*e2etest.Env
	rollouts map[string]string // by environment
}

// openIn opens a release of checkout in env through the API, finishes
// its rollout's only batch, and names the rollout.
func (s *probeScene) openIn(env string) {
	s.T.Helper()
	release := "r1:" + env + "-eu/" + env
	code, body := s.Do("POST", "/api/v1/releases", "application/json", []byte(fmt.Sprintf(`{"release_id": %q,
		"app": "checkout", "environment": %q, "cluster": "%s-eu", "repository": %q, "image": "ghcr.io/acme/checkout:v1",
		"git_revision": %q}`, release, env, env, repo, headSHA)))
	if code != http.StatusCreated {
		s.T.Fatalf("POST release %s answered %d: %s", release, code, body)
	}
	s.WaitFor("the rollout of "+release, wait, func() bool {
		_, b := s.Do("GET", "/api/v1/rollouts?release_id="+url.QueryEscape(release), "", nil)
		var out struct{ Rollouts []rolloutflow.StatusJSON }
		_ = json.Unmarshal(b, &out)
		if len(out.Rollouts) == 1 {
			s.rollouts[env] = out.Rollouts[0].ID
		}
		return s.rollouts[env] != ""
	})
	var batch githubtest.Dispatch
	s.WaitFor("the batch of "+release, wait, func() bool {
		for _, d := range s.GitHub.Dispatches(repo) {
			if d.Inputs["release_id"] == release {
				batch = d
				return true
			}
		}
		return false
	})
	s.Deliver("workflow_run", s.WorkflowRun(e2etest.Run{Repository: repo, ID: batch.RunID, Attempt: 1, Conclusion: "success", HeadSHA: headSHA}))
}

// reading waits for the n-th probe workflow dispatched for env's rollout
// and is the post its runners would make: every probe it asks for
// answered 200.
func (s *probeScene) reading(env string, n int) rolloutflow.ProbePost {
	s.T.Helper()
	var d githubtest.Dispatch
	s.WaitFor(fmt.Sprintf("reading %d of %s's rollout", n, env), wait, func() bool {
		seen := 0
		for _, x := range s.GitHub.Dispatches(repo) {
			if x.Workflow == rollout.DefaultProbeWorkflow && x.Inputs["rollout_id"] == s.rollouts[env] {
				if seen++; seen == n {
					d = x
					return true
				}
			}
		}
		return false
	})
	var probes []rolloutflow.ProbeTarget
	if err := json.Unmarshal([]byte(fmt.Sprint(d.Inputs["probes"])), &probes); err != nil || len(probes) == 0 {
		s.T.Fatalf("probes input %v: %v", d.Inputs["probes"], err)
	}
	post := rolloutflow.ProbePost{Reading: fmt.Sprint(d.Inputs["reading"]), WorkflowRunID: d.RunID}
	for _, p := range probes {
		post.Results = append(post.Results, rolloutflow.RunnerProbe{URL: p.URL, Host: p.Host, Status: http.StatusOK})
	}
	return post
}

// token is an acme/checkout job's OIDC token on ref, in the GitHub
// Environment ghEnv ("" for a job without one).
func (s *probeScene) token(ref, ghEnv string) string {
	claims := map[string]any{"ref": ref, "sub": "repo:" + repo + ":ref:" + ref}
	if ghEnv != "" {
		claims["environment"], claims["sub"] = ghEnv, "repo:"+repo+":environment:"+ghEnv
	}
	return s.Issuer.Token(s.T, claims)
}

type probeAnswer struct {
	Error, Field string
	Outcome      string
}

// post sends env's rollout a reading's results with token, as the
// action's mode: probe does.
func (s *probeScene) post(env, token string, p rolloutflow.ProbePost) (int, probeAnswer) {
	s.T.Helper()
	body, _ := json.Marshal(p)
	req, err := http.NewRequest(http.MethodPost, s.URL+"/api/v1/rollouts/"+url.PathEscape(s.rollouts[env])+"/probes", bytes.NewReader(body))
	if err != nil {
		s.T.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.T.Fatalf("post probes: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var a probeAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		s.T.Fatalf("probes answered %d: %s", resp.StatusCode, b)
	}
	return resp.StatusCode, a
}

// An environment's oidc rule holds for the readings of its rollouts as it
// does for its facts: a feature branch's workflow cannot post the probe
// results that move prod's waves on (or stop them), nor can a job outside
// the production GitHub Environment, and what they sent is not stored;
// main in production posts them, and staging, without a rule, takes any
// workflow of the repository. Without the rule nothing changes.
func TestOIDCRuleDecidesWhichWorkflowsPostARolloutsProbes(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, oidcRuleHoldsProbes)
}

func oidcRuleHoldsProbes(t *testing.T, dbURL string) {
	s := &probeScene{Env: startOn(t, dbURL, probeRuleConfig(prodProbeRule), "write"), rollouts: map[string]string{}}
	s.openIn("prod")
	s.openIn("staging")
	feature := s.token("refs/heads/feature", "production")

	prod := s.reading("prod", 1)
	for _, c := range []struct {
		name, token, key, claim string
	}{
		{"a feature branch", feature, "apps.checkout.environments.prod.oidc.refs", `the token's ref claim is "refs/heads/feature"`},
		{"main outside the production environment", s.token("refs/heads/main", ""),
			"apps.checkout.environments.prod.oidc.environments", "the token has no environment claim"},
	} {
		code, got := s.post("prod", c.token, prod)
		if code != http.StatusForbidden || got.Field != c.key || !strings.Contains(got.Error, c.claim) ||
			!strings.Contains(got.Error, "restricts which workflows may post for checkout in prod") {
			t.Errorf("%s posting prod's reading: %d %+v; want 403 on %s saying %q", c.name, code, got, c.key, c.claim)
		}
	}
	// Stored, not a duplicate: the refused posts stored nothing.
	if code, got := s.post("prod", s.token("refs/heads/main", "production"), prod); code != http.StatusOK || got.Outcome != "stored" {
		t.Errorf("main in production posting prod's reading: %d %+v, want 200 stored", code, got)
	}
	if code, got := s.post("staging", feature, s.reading("staging", 1)); code != http.StatusOK || got.Outcome != "stored" {
		t.Errorf("a feature branch posting staging's reading (no rule): %d %+v, want 200 stored", code, got)
	}

	// The rule is read at each post: without it, prod's next reading
	// takes the feature branch's results again.
	s.GitHub.PutFile(repo, "main", ".github/ripcord.yml", probeRuleConfig(""))
	if code, got := s.post("prod", feature, s.reading("prod", 2)); code != http.StatusOK || got.Outcome != "stored" {
		t.Errorf("a feature branch posting prod's reading without the rule: %d %+v, want 200 stored", code, got)
	}
}

// A rule that cannot be checked holds the readings too: while the file
// does not load a workflow's results are refused on the key to fix, and
// while GitHub cannot be read it is 503, before the reading is looked at;
// nothing is stored.
func TestAnOIDCRuleThatCannotBeCheckedRefusesProbes(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := &probeScene{Env: startOn(t, dbURL, probeRuleConfig(prodProbeRule), "write"), rollouts: map[string]string{}}
		s.openIn("prod")
		mainProd := s.token("refs/heads/main", "production")
		post := s.reading("prod", 1)

		s.GitHub.PutFile(repo, "main", ".github/ripcord.yml", probeRuleConfig(prodProbeRule)+"        rollback: {mode: teleport}\n")
		code, got := s.post("prod", mainProd, post)
		if code != http.StatusUnprocessableEntity || got.Field != "apps.checkout.environments.prod.rollback.mode" || !strings.Contains(got.Error, "oidc") {
			t.Errorf("a file that does not load: %d %+v; want 422 on its first problem's key, saying why", code, got)
		}
		s.GitHub.PutFile(repo, "main", ".github/ripcord.yml", probeRuleConfig(prodProbeRule))
		if code, got := s.post("prod", mainProd, post); code != http.StatusOK || got.Outcome != "stored" {
			t.Errorf("main in production once the file loads: %d %+v, want 200 stored (nothing stored before)", code, got)
		}

		// Stored now: a post the rule let through would be a duplicate.
		s.GitHub.Handle("GET /repos/{owner}/{repo}/contents/{path}", func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
			w.WriteHeader(http.StatusBadGateway)
		})
		code, got = s.post("prod", mainProd, post)
		if code != http.StatusServiceUnavailable || !strings.Contains(got.Error, "retry later") {
			t.Errorf("GitHub not answering: %d %+v; want 503", code, got)
		}
	})
}
