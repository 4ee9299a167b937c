package rollbackflow_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// A failed deploy run's recovery decides to roll back to r2 while a person's
// rollback to r1 has its pull request open in the environment: a second
// pull request would be open beside it, and merging both deploys two
// rollbacks. Recovery opens none; its episode ends in an alert whose issue
// and ripcord/recovery check run name the open pull request.
func TestRecoveryRollbackWhileAnotherIsOpenOpensNoSecondPullRequest(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		prURL := s.personRollsBackToR1(t).PRURL
		s.Settle(jobKinds...)
		jobs := s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'rollback_pull_request'`)

		s.GitHub.PutFile(appRepo, "main", ".github/ripcord.yml", repoConfig+"recovery:\n  max_retries: 0\n")
		s.Deliver("workflow_run", s.WorkflowRun(e2etest.Run{Repository: appRepo, ID: 7003, Attempt: 1,
			Conclusion: "failure", HeadSHA: sha(3)}))
		s.WaitFor("the episode to end, or a second pull request", wait, func() bool {
			st := s.String(`SELECT state FROM episodes WHERE run_id = 7003`)
			return st != "" && st != "rolling_back" && st != "retrying" || len(s.GitHub.PullRequests(gitops)) > 1
		})
		s.Settle(append(jobKinds, "recovery_check", "recovery_alert")...)

		if st := s.String(`SELECT state FROM episodes WHERE run_id = 7003`); st != "alerted" {
			t.Errorf("episode state %q, want alerted", st)
		}
		if n := len(s.GitHub.PullRequests(gitops)); n != 1 {
			t.Errorf("pull requests in %s = %d, want the one open", gitops, n)
		}
		if n := s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'rollback_pull_request'`); n != jobs {
			t.Errorf("rollback jobs = %d, want %d: nothing queued", n, jobs)
		}
		var alert string
		for _, is := range s.GitHub.Issues(appRepo) {
			if strings.Contains(is.Title, "manual intervention required") {
				alert = is.Body
			}
		}
		if !strings.Contains(alert, prURL) || !strings.Contains(alert, "open already") {
			t.Errorf("alert issue %q, want it to name the open pull request %s", alert, prURL)
		}
		var check string
		for _, cr := range s.GitHub.CheckRuns(appRepo) {
			if cr.Name == "ripcord/recovery" {
				check = cr.Title + "\n" + cr.Summary + "\n" + cr.Text
			}
		}
		if !strings.Contains(check, prURL) {
			t.Errorf("ripcord/recovery check run %q, want it to name the open pull request %s", check, prURL)
		}
	})
}

// personRollsBackToR1 asks, through the API, for a rollback of checkout in
// prod to r1 and waits for its release: the rollback a person has open.
func (s *scene) personRollsBackToR1(t *testing.T) records.Record {
	t.Helper()
	return s.personRollsBack(t, "r1:prod-eu/prod")
}

// personRollsBack asks, through the API, for a rollback of checkout in prod
// to the release to and waits for its release.
func (s *scene) personRollsBack(t *testing.T, to string) records.Record {
	t.Helper()
	body, err := json.Marshal(map[string]string{"app": "checkout", "environment": "prod", "to": to, "reason": "r2 is slow too"})
	if err != nil {
		t.Fatal(err)
	}
	status, out := s.Do("POST", "/api/v1/rollbacks", "application/json", body)
	var first struct {
		ReleaseID string `json:"release_id"`
	}
	if err := json.Unmarshal(out, &first); status != 202 || err != nil {
		t.Fatalf("POST /api/v1/rollbacks = %d %s (%v)", status, out, err)
	}
	return s.waitRelease(first.ReleaseID)
}
