package rollbackflow_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// mergeSilently makes GitHub's pull request number of the GitOps
// repository merged, with no webhook delivered: ripcord missed the merge,
// and its record still says the pull request is open.
func (s *scene) mergeSilently(number int) {
	s.T.Helper()
	s.closePullRequest(number)
	get := s.GitHub.Default("GET /repos/{owner}/{repo}/pulls/{pull_number}")
	s.GitHub.Handle("GET /repos/{owner}/{repo}/pulls/{pull_number}", func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		rec := httptest.NewRecorder()
		get(rec, r, p)
		var pr map[string]any
		if p["owner"]+"/"+p["repo"] != gitops || p["pull_number"] != strconv.Itoa(number) || rec.Code != http.StatusOK ||
			json.Unmarshal(rec.Body.Bytes(), &pr) != nil {
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		pr["merged"], pr["merged_at"] = true, time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(pr)
	})
}

// A person's rollback to r1 has its pull request merged on GitHub long
// ago, but ripcord missed the merge webhook: its record still says open.
// A failed deploy run's recovery then decides to roll back to r2. Recovery
// asks GitHub, as a person's request does: the merged pull request is not
// in the way, and recovery opens its rollback pull request. One GitHub
// says is open still is: the episode ends in an alert naming it.
func TestRecoveryRollbackAsksGitHubWhetherTheOpenOneWasMerged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		merged bool
		state  string // the episode's
		prs    int    // in the GitOps repository
	}{
		{"merged on GitHub", true, "rolling_back", 2},
		{"open on GitHub", false, "alerted", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				t.Parallel()
				s := newScene(t, dbURL)
				rec := s.personRollsBackToR1(t)
				s.Settle(jobKinds...)
				if tc.merged {
					s.mergeSilently(rec.PRNumber)
				}
				asked := s.GitHub.Count("GET", "/repos/{owner}/{repo}/pulls/{pull_number}")

				s.GitHub.PutFile(appRepo, "main", ".github/ripcord.yml", repoConfig+"recovery:\n  max_retries: 0\n")
				s.Deliver("workflow_run", s.WorkflowRun(e2etest.Run{Repository: appRepo, ID: 7003, Attempt: 1,
					Conclusion: "failure", HeadSHA: sha(3)}))
				s.WaitFor("the episode to end, or a second pull request", wait, func() bool {
					st := s.String(`SELECT state FROM episodes WHERE run_id = 7003`)
					return st != "" && st != "rolling_back" && st != "retrying" || len(s.GitHub.PullRequests(gitops)) > 1
				})
				s.Settle(append(jobKinds, "recovery_check", "recovery_alert")...)

				if st := s.String(`SELECT state FROM episodes WHERE run_id = 7003`); st != tc.state {
					t.Errorf("episode state %q, want %s", st, tc.state)
				}
				if n := len(s.GitHub.PullRequests(gitops)); n != tc.prs {
					t.Errorf("pull requests in %s = %d, want %d", gitops, n, tc.prs)
				}
				if n := s.GitHub.Count("GET", "/repos/{owner}/{repo}/pulls/{pull_number}"); n <= asked {
					t.Errorf("recovery did not ask GitHub about pull request #%d", rec.PRNumber)
				}
				if n := s.Int(`SELECT COUNT(*) FROM records WHERE release_id = $1 AND state = 'opened'`, rec.ReleaseID); n != 1 {
					t.Errorf("rollback %s is no longer opened: a merged pull request's rollback is deploying", rec.ReleaseID)
				}
			})
		})
	}
}
