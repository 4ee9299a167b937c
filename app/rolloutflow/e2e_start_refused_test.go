package rolloutflow_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A start of a rollout that is refused (the App not installed, an
// environment without rollout:, a config that does not validate, a GitHub
// error) opens no release: none is left opened with no deploy to report on,
// to stall and show in the releases list as if deploying. The same request
// sent again once the cause is gone starts the rollout as a first try
// would, and a release stored before a refused start is left as it was.
func TestRefusedRolloutStartLeavesNoReleaseBehind(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, refusedStartLeavesNothing)
}

func refusedStartLeavesNothing(t *testing.T, dbURL string) {
	e := e2etest.Start(t, dbURL, app.Options{})
	e.CheckRequestsAtCleanup(t)
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", e2eConfig)

	start := func(version, environment string) (int, string) {
		t.Helper()
		code, body := e.Do("POST", "/api/v1/rollouts", "application/json", []byte(`{"repository": "acme/checkout",
			"app": "checkout", "environment": "`+environment+`", "cluster": "prod-eu", "version": "`+version+`", "author": "alice"}`))
		return code, string(body)
	}
	nothingLeft := func(why, releaseID string) {
		t.Helper()
		for _, q := range []string{
			`SELECT COUNT(*) FROM records WHERE release_id = $1`,
			`SELECT COUNT(*) FROM audit_events WHERE release_id = $1`,
			`SELECT COUNT(*) FROM rollouts WHERE release_id = $1`,
		} {
			if n := e.Int(q, releaseID); n != 0 {
				t.Errorf("%s: %s is %d, want 0", why, q, n)
			}
		}
		code, body := e.Do("GET", "/api/v1/releases?app=checkout", "", nil)
		if code != http.StatusOK || strings.Contains(string(body), releaseID) {
			t.Errorf("%s: releases list %d %s shows %s", why, code, body, releaseID)
		}
	}
	refused := func(why, version, environment string, status int, says string) {
		t.Helper()
		code, body := start(version, environment)
		if code != status || !strings.Contains(body, says) {
			t.Errorf("%s: answered %d %s, want %d saying %q", why, code, body, status, says)
		}
		nothingLeft(why, "checkout-"+version+":prod-eu/"+environment)
	}

	refused("the App not installed", "v2", "prod", http.StatusUnprocessableEntity, "not installed on acme/checkout")
	e.Install(repo)
	// The same request, once installed, starts it as a first try would.
	code, body := start("v2", "prod")
	var st rolloutflow.StatusJSON
	_ = json.Unmarshal([]byte(body), &st)
	if code != http.StatusCreated || st.ReleaseID != "checkout-v2:prod-eu/prod" {
		t.Fatalf("the start sent again once installed: %d %s", code, body)
	}
	if n := e.Int(`SELECT COUNT(*) FROM audit_events WHERE release_id = $1 AND type = 'release_opened'`, st.ReleaseID); n != 1 {
		t.Errorf("%d release_opened audit events of %s, want 1", n, st.ReleaseID)
	}
	if n := e.Int(`SELECT COUNT(*) FROM rollouts WHERE release_id = $1`, st.ReleaseID); n != 1 {
		t.Errorf("%d rollouts of %s, want 1", n, st.ReleaseID)
	}

	refused("an environment without rollout:", "v2", "staging", http.StatusUnprocessableEntity, "has no rollout:")

	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", strings.Replace(e2eConfig, "waves:", "wavez:", 1))
	refused("a config that does not validate", "v3", "prod", http.StatusUnprocessableEntity, "rollout of checkout-v3:prod-eu/prod")
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", e2eConfig)

	const getRepo = "GET /repos/{owner}/{repo}"
	e.GitHub.Handle(getRepo, func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"message":"Not Found"}`))
	})
	refused("GitHub refusing to read the repository", "v3", "prod", http.StatusUnprocessableEntity, "default branch of acme/checkout")
	// GitHub not answering is no refusal of the start: the status says the
	// same request may succeed later.
	e.GitHub.Handle(getRepo, func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte(`{"message":"Server Error"}`))
	})
	refused("GitHub not answering (502)", "v3", "prod", http.StatusBadGateway, "send the same request again later")
	e.GitHub.Handle(getRepo, e.GitHub.Default(getRepo))
	if code, body := start("v3", "prod"); code != http.StatusCreated {
		t.Errorf("the start sent again once GitHub answers: %d %s", code, body)
	}

	// A release a workflow opened before is left as it was by a refused start.
	const before = "s1:prod-eu/staging"
	code, b := e.Do("POST", "/api/v1/releases", "application/json", []byte(`{"release_id": "`+before+`",
		"app": "checkout", "environment": "staging", "cluster": "prod-eu", "repository": "acme/checkout", "image": "v1"}`))
	if code != http.StatusCreated {
		t.Fatalf("POST release %s: %d %s", before, code, b)
	}
	e.Settle("rollout_start")
	read := func() string {
		_, rec := e.Do("GET", "/api/v1/releases/"+url.PathEscape(before), "", nil)
		_, audit := e.Do("GET", "/api/v1/releases/"+url.PathEscape(before)+"/audit", "", nil)
		return string(rec) + "\n" + string(audit)
	}
	was := read()
	code, b = e.Do("POST", "/api/v1/rollouts", "application/json", []byte(`{"release_id": "`+before+`"}`))
	if code != http.StatusUnprocessableEntity {
		t.Errorf("a start of %s, whose environment has no rollout: answered %d %s", before, code, b)
	}
	if now := read(); now != was {
		t.Errorf("the refused start changed %s:\nwas %s\nis  %s", before, was, now)
	}
}

// A start GitHub's spent rate limit stops answers 503, not 422: the same
// request may succeed after the reset, and nothing was stored meanwhile.
func TestRolloutStartOnGitHubsRateLimitIsRetryable(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		e := e2etest.Start(t, dbURL, app.Options{})
		e.CheckRequestsAtCleanup(t)
		e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", e2eConfig)
		e.Install(repo)
		const getRepo = "GET /repos/{owner}/{repo}"
		e.GitHub.Handle(getRepo, func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-RateLimit-Limit", "5000")
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"message":"API rate limit exceeded for installation ID 1.","documentation_url":"https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"}`))
		})
		code, body := e.Do("POST", "/api/v1/rollouts", "application/json", []byte(`{"repository": "acme/checkout",
			"app": "checkout", "environment": "prod", "cluster": "prod-eu", "version": "v3", "author": "alice"}`))
		if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "send the same request again later") {
			t.Errorf("a start on GitHub's rate limit: %d %s, want 503 saying to send it again later", code, body)
		}
		if n := e.Int(`SELECT COUNT(*) FROM records WHERE release_id = $1`, "checkout-v3:prod-eu/prod"); n != 0 {
			t.Errorf("%d releases opened by a start on GitHub's rate limit, want none", n)
		}
	})
}
