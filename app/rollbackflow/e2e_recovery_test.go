package rollbackflow_test

import (
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A failed deploy run whose retries are exhausted, in an environment that
// rolls back by pull request, opens the rollback pull request through the
// same job as every other way to start one.
func TestRecoveryRollsBackByPullRequest(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.GitHub.PutFile(appRepo, "main", ".github/ripcord.yml", repoConfig+"recovery:\n  max_retries: 0\n")
		// r3's deploy run (7003) posted a failed task fact; GitHub reports it failed.
		s.Deliver("workflow_run", s.WorkflowRun(e2etest.Run{Repository: appRepo, ID: 7003, Attempt: 1,
			Conclusion: "failure", HeadSHA: sha(3)}))
		s.WaitFor("the rollback pull request", wait, func() bool { return len(s.GitHub.PullRequests(gitops)) == 1 })
		s.WaitFor("the rollback release", wait, func() bool {
			return s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback' AND rollback_of = 'r3:prod-eu/prod'`) == 1
		})
		rec := s.waitRelease(s.String(`SELECT release_id FROM records WHERE kind = 'rollback'`))
		if !strings.Contains(rec.Image, "v2") || rec.GitRevision != sha(2) {
			t.Errorf("rollback release = %+v, want r2's image and revision", rec)
		}
		if pr := s.GitHub.PullRequests(gitops)[0]; !strings.HasPrefix(pr.Title, "Rollback: checkout prod to "+sha(2)[:8]) {
			t.Errorf("pull request title %q", pr.Title)
		}
		if n := s.GitHub.Count("POST", "/repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs"); n != 0 {
			t.Errorf("%d re-runs with max_retries 0, want none", n)
		}
	})
}
