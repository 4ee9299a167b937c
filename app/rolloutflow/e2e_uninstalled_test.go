package rolloutflow_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// uninstall delivers the deletion of the App's installation on repo, as
// GitHub sends it when the App is uninstalled, and waits until it is
// applied.
func uninstall(e *e2etest.Env) {
	e.T.Helper()
	e.Deliver("installation", e2etest.Edit(e.T, githubtest.LoadPayload(e.T, "installation", "deleted.payload.json"), func(m map[string]any) {
		m["installation"].(map[string]any)["id"] = githubtest.InstallationID
		r := m["repositories"].([]any)[0].(map[string]any)
		r["full_name"], r["name"] = repo, "checkout"
	}))
	e.WaitFor("the uninstall to be applied", wait, func() bool {
		return e.Int(`SELECT COUNT(*) FROM installation_repositories WHERE repository = $1`, repo) == 0
	})
}

// removeRepository delivers repo's removal from the App's installation
// (Configure, Repository access) and waits until it is applied.
func removeRepository(e *e2etest.Env) {
	e.T.Helper()
	// GitHub has the repository in no installation of the App now: ripcord
	// asks before it applies a removal (a replayed one must not apply).
	e.GitHub.Handle("GET /repos/{owner}/{repo}/installation", func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"message": "Not Found", "documentation_url": "https://docs.github.com/rest/apps/apps#get-a-repository-installation-for-the-authenticated-app"}`)
	})
	e.Deliver("installation_repositories", e2etest.Edit(e.T, githubtest.LoadPayload(e.T, "installation_repositories", "removed.payload.json"), func(m map[string]any) {
		m["installation"].(map[string]any)["id"] = githubtest.InstallationID
		r := m["repositories_removed"].([]any)[0].(map[string]any)
		r["full_name"], r["name"] = repo, "checkout"
	}))
	e.WaitFor("the removal to be applied", wait, func() bool {
		return e.Int(`SELECT COUNT(*) FROM installation_repositories WHERE repository = $1`, repo) == 0
	})
}

// rolloutCalls are the requests GitHub received for the rollouts of repo:
// on the repository, or for an installation token to make them. The
// App's question whether an installation has the repository is the
// uninstall's, not a rollout's.
func rolloutCalls(gh *githubtest.Server) []string {
	var out []string
	for _, r := range gh.Requests() {
		if r.Route == "/repos/{owner}/{repo}/installation" {
			continue
		}
		if strings.HasPrefix(r.Path, "/repos/"+repo+"/") || strings.HasSuffix(r.Route, "/access_tokens") {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	return out
}

// A rollout paused between waves for an approval, when the App is
// uninstalled from its repository, ends as failed at once, its audit
// saying why; nothing is asked of GitHub for it after (no check run can
// be written), and it cannot be moved on.
func TestAnUninstallEndsTheRolloutsOfTheRepository(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := atFirstApproval(t, dbURL, e2eConfig, "write")
		s.settle()
		if st := s.status(); st.Rollout.Status != rolloutflow.PausedApproval {
			t.Fatalf("status %s, want paused-approval before the uninstall", st.Rollout.Status)
		}
		before := len(rolloutCalls(s.GitHub))

		uninstall(s.Env)
		s.settle()
		st := s.status()
		if st.Rollout.Status != rolloutflow.Failed || st.State != "ERROR" {
			t.Errorf("after the uninstall: status %s (%s), want failed", st.Rollout.Status, st.State)
		}
		var audit []string
		for _, l := range st.Audit {
			audit = append(audit, l.Message)
		}
		if all := strings.Join(audit, "\n"); !strings.Contains(all, "the App was uninstalled from "+repo) {
			t.Errorf("audit does not say the App was uninstalled from %s:\n%s", repo, all)
		}

		// Neither an approval nor an abort moves it now.
		code, body := s.Do("POST", "/api/v1/rollouts/"+url.PathEscape(s.id)+"/abort", "application/json",
			[]byte(`{"user": "bob", "reason": "stuck"}`))
		if code < 400 || !strings.Contains(string(body), "has ended") {
			t.Errorf("abort after the uninstall answered %d %s, want a refusal: it has ended", code, body)
		}
		s.settle()
		if calls := rolloutCalls(s.GitHub); len(calls) != before {
			t.Errorf("GitHub was asked for the rollout after the uninstall: %q", calls[before:])
		}
		if n := len(s.GitHub.Dispatches(repo)); n != 1 {
			t.Errorf("%d batches dispatched, want only the canary's", n)
		}
	})
}

// postFact posts one task fact of repo with token, as the bundled action
// does, and returns the answer.
func postFact(t *testing.T, e *e2etest.Env, token string) (int, probeAnswer) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"source": "task", "repository": repo, "workflow_run_id": 4242, "run_attempt": 1,
		"status": "in_progress", "app": "checkout", "environment": "prod", "cluster": "prod-eu", "version": "v9",
		"release_id": "r9:prod-eu/prod", "observed_at": time.Now().UTC().Format(time.RFC3339)})
	req, err := http.NewRequest(http.MethodPost, e.URL+"/api/v1/facts", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("post fact: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var a probeAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("facts answered %d: %s", resp.StatusCode, b)
	}
	return resp.StatusCode, a
}

// The probe workflow of a repository the App was removed from is told, as
// its task facts are, to install the App there (403), not to retry later
// a rule no read can check now; the rollout it read for, which was waiting
// at its gate for the reading, has ended.
func TestProbesOfAnUninstalledRepositoryAreToldToInstallTheApp(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := &probeScene{Env: startOn(t, dbURL, probeRuleConfig(prodProbeRule), "write"), rollouts: map[string]string{}}
		s.openIn("prod")
		mainProd := s.token("refs/heads/main", "production")
		post := s.reading("prod", 1)
		before := len(rolloutCalls(s.GitHub))

		removeRepository(s.Env)
		factCode, fact := postFact(t, s.Env, mainProd)
		if factCode != http.StatusForbidden || fact.Field != "repository" ||
			!strings.Contains(fact.Error, "the ripcord App is not installed on "+repo+": install it there") {
			t.Fatalf("a task fact after the removal: %d %+v; want facts' 403 naming the App's install", factCode, fact)
		}
		code, got := s.post("prod", mainProd, post)
		if code != factCode || got != fact {
			t.Errorf("the probe post after the removal: %d %+v; want the task fact's answer: %d %+v", code, got, factCode, fact)
		}

		id := s.rollouts["prod"]
		s.WaitFor("the rollout to end", wait, func() bool {
			return s.String(`SELECT status FROM rollouts WHERE id = $1`, id) == string(rolloutflow.Failed) &&
				s.String(`SELECT phase FROM rollouts WHERE id = $1`, id) == "done"
		})
		if n := s.Int(`SELECT COUNT(*) FROM rollout_audit WHERE rollout_id = $1 AND message LIKE $2`, id,
			"%the App was uninstalled from "+repo+"%"); n == 0 {
			t.Errorf("the rollout's audit does not say the App was uninstalled from %s", repo)
		}
		if calls := rolloutCalls(s.GitHub); len(calls) != before {
			t.Errorf("GitHub was asked for the rollout after the removal: %q", calls[before:])
		}
	})
}
