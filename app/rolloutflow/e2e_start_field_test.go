package rolloutflow_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// Users and the CLI read a refused start by its status and field, so each
// refusal says what it is: what to fix (the repository, the config file and,
// for a YAML syntax error, its line) in field with 422, and GitHub not
// answering (502) or rate-limited (503, with Retry-After when GitHub named
// the reset) as worth sending again.
func TestRolloutStartRefusalsNameWhatToFix(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, refusalsNameWhatToFix)
}

type startAnswer struct {
	status     int
	field, msg string
	retryAfter string
}

func refusalsNameWhatToFix(t *testing.T, dbURL string) {
	e := e2etest.Start(t, dbURL, app.Options{})
	e.CheckRequestsAtCleanup(t)
	start := func() startAnswer {
		t.Helper()
		req, err := http.NewRequest("POST", e.URL+"/api/v1/rollouts", bytes.NewReader([]byte(`{"repository": "acme/checkout",
			"app": "checkout", "environment": "prod", "cluster": "prod-eu", "version": "v2", "author": "alice"}`)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+e2etest.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var ae pipeline.APIError
		if err := json.Unmarshal(body, &ae); err != nil {
			t.Fatalf("answer %d %s: %v", resp.StatusCode, body, err)
		}
		return startAnswer{resp.StatusCode, ae.Field, ae.Error, resp.Header.Get("Retry-After")}
	}
	refused := func(why string, status int, field, says string) startAnswer {
		t.Helper()
		got := start()
		if got.status != status || got.field != field || !strings.Contains(got.msg, says) {
			t.Errorf("%s: answered %d field %q %q, want %d field %q saying %q", why, got.status, got.field, got.msg, status, field, says)
		}
		return got
	}
	answer := func(route string, status int, header http.Header, body string) {
		e.GitHub.Handle(route, func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
			for k, v := range header {
				w.Header()[k] = v
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		})
	}

	refused("the App not installed", http.StatusUnprocessableEntity, "repository", "not installed on acme/checkout")
	// Installed two hours ago: the token the installation event took (to
	// list the installation's repositories) has expired since, so the
	// start asks GitHub for a new one, as it does once GitHub has deleted
	// the installation and before its deleted event is applied (applied,
	// the start is refused from ripcord's own table, asking nothing).
	e.GitHub.SetClock(func() time.Time { return time.Now().Add(-2 * time.Hour) })
	e.Install(repo)
	e.GitHub.SetClock(time.Now)

	const token = "POST /app/installations/{installation_id}/access_tokens"
	answer(token, http.StatusNotFound, nil, `{"message":"Not Found"}`)
	refused("the App's installation deleted (GitHub refuses it a token)", http.StatusUnprocessableEntity, "repository",
		"GitHub refuses the ripcord App a token for the repository's installation (404: deleted or suspended)")
	e.GitHub.Handle(token, e.GitHub.Default(token))

	refused("no config in the repository nor its organisation", http.StatusUnprocessableEntity, ".github/ripcord.yml",
		"no .github/ripcord.yml in acme/checkout, nor in its organisation's acme/.github repository: add one")

	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", "version: 1\napps:\n  checkout: [\n")
	refused("a YAML syntax error", http.StatusUnprocessableEntity, ".github/ripcord.yml:3", ".github/ripcord.yml:3:1: invalid YAML")

	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", e2eConfig)
	const getRepo = "GET /repos/{owner}/{repo}"
	answer(getRepo, http.StatusNotFound, nil, `{"message":"Not Found"}`)
	refused("GitHub refusing to read the repository", http.StatusUnprocessableEntity, "repository", "default branch of acme/checkout")

	answer(getRepo, http.StatusBadGateway, nil, `{"message":"Server Error"}`)
	if got := refused("GitHub not answering", http.StatusBadGateway, "", "send the same request again later"); got.retryAfter != "" {
		t.Errorf("GitHub not answering: Retry-After %q, want none (nobody knows when)", got.retryAfter)
	}

	reset := time.Now().Add(time.Hour)
	answer(getRepo, http.StatusForbidden, http.Header{"X-Ratelimit-Limit": {"5000"}, "X-Ratelimit-Remaining": {"0"},
		"X-Ratelimit-Reset": {strconv.FormatInt(reset.Unix(), 10)}},
		`{"message":"API rate limit exceeded for installation ID 1.","documentation_url":"https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"}`)
	got := refused("GitHub's rate limit", http.StatusServiceUnavailable, "", "send the same request again later")
	// The reset is an hour away; the answer may round, and ghlimit adds
	// a margin past the reset.
	if secs, err := strconv.Atoi(got.retryAfter); err != nil || secs < 3500 || secs > 3700 {
		t.Errorf("GitHub's rate limit: Retry-After %q, want the seconds to GitHub's reset (about 3600)", got.retryAfter)
	}
	// Last: the client keeps GitHub's limit until its reset.
}
