package rollbackflow_test

import (
	"testing"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// A person's rollback to r2 has its pull request closed without merging on
// GitHub, and ripcord missed the webhook: its record still says open. A
// failed deploy run's recovery then decides the same rollback (r3 back to
// r2). Recovery asks GitHub, as a person's request does: the closed pull
// request's release is withdrawn, and recovery opens the next attempt's
// pull request and follows it, rather than following the closed one (which
// would never deploy, and leave the episode rolling back for ever).
func TestRecoveryRollbackAsksGitHubWhetherTheSameOneWasClosed(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		old := s.personRollsBack(t, "r2:prod-eu/prod")
		s.Settle(jobKinds...)
		s.closePullRequest(old.PRNumber) // no webhook: ripcord misses the close

		s.GitHub.PutFile(appRepo, "main", ".github/ripcord.yml", repoConfig+"recovery:\n  max_retries: 0\n")
		s.Deliver("workflow_run", s.WorkflowRun(e2etest.Run{Repository: appRepo, ID: 7003, Attempt: 1,
			Conclusion: "failure", HeadSHA: sha(3)}))
		s.WaitFor("the episode to follow a rollback release, or end", wait, func() bool {
			return s.String(`SELECT rollback_release_id FROM episodes WHERE run_id = 7003`) != "" ||
				s.String(`SELECT state FROM episodes WHERE run_id = 7003`) == "alerted"
		})
		s.Settle(append(jobKinds, "recovery_check", "recovery_alert")...)
		logCalls(t, s)

		id := s.String(`SELECT rollback_release_id FROM episodes WHERE run_id = 7003`)
		if st := s.String(`SELECT state FROM episodes WHERE run_id = 7003`); st != "rolling_back" || id == old.ReleaseID {
			t.Fatalf("episode %s following rollback %q, want rolling_back with a rollback other than the closed %s", st, id, old.ReleaseID)
		}
		if r, _ := s.release(old.ReleaseID); r.State != records.StateAborted {
			t.Errorf("rollback %s of the closed pull request is %s, want %s", old.ReleaseID, r.State, records.StateAborted)
		}
		rec := s.waitRelease(id)
		prs := s.GitHub.PullRequests(gitops)
		if len(prs) != 2 || prs[0].State != "closed" || prs[1].State != "open" || prs[1].Number != rec.PRNumber {
			t.Errorf("pull requests = %+v, want the closed one and recovery's open #%d", prs, rec.PRNumber)
		}
		if rec.RollbackOf != "r3:prod-eu/prod" || rec.GitRevision != sha(2) {
			t.Errorf("recovery's rollback = %+v, want r3 back to r2's commit", rec)
		}
	})
}
