package rollbackflow_test

import (
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/rollbackpr"
)

// The pull-request job ran to the end (pull request open, release stored
// with its audit and reply in one transaction) but the process died before
// River recorded the job complete, so the job runs again; meanwhile the
// pull request was merged (closed, the base holding the rollback's values).
// The rerun has nothing left to do. Before, it opened a second pull request
// on the same branch, could not store it (the stored release names the
// first: a conflict) and failed every attempt until River dropped it,
// leaving a stray rollback pull request in the GitOps repository.
func TestRerunOfAStoredRollbackJobReportsNoFailure(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		pr, rec := s.rollbackByComment()
		branch := rollbackpr.BranchName(rec.Environment, rec.GitRevision)
		content, ok := s.GitHub.FileAt(gitops, branch, releaseFile)
		if !ok {
			t.Fatalf("no %s on %s", releaseFile, branch)
		}
		s.GitHub.PutFile(gitops, "main", releaseFile, content) // the pull request merged
		s.closePullRequest(rec.PRNumber)
		replies := len(s.GitHub.Comments(appRepo))

		db := testdb.Open(t, dbURL)
		res, err := db.Write.Exec(`UPDATE river_job SET state = 'available', finalized_at = NULL
			WHERE kind = 'rollback_pull_request' AND state = 'completed'`)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			t.Fatalf("jobs made to run again = %d, want 1", n)
		}
		s.Settle(jobKinds...)
		if n := s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'rollback_pull_request' AND attempt < 2`); n != 0 {
			t.Fatalf("the job did not run again")
		}
		if prs := s.GitHub.PullRequests(gitops); len(prs) != 1 {
			t.Errorf("pull requests in %s = %d, want only the first", gitops, len(prs))
		}
		if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE type = 'rollback_failed'`); n != 0 {
			t.Errorf("rollback_failed events = %d, want none: rollback %s was opened (and merged)", n, rec.ReleaseID)
		}
		if got := s.GitHub.Comments(appRepo); len(got) != replies {
			t.Errorf("comments on %s#%d after the rerun = %d, want still %d: %q", appRepo, pr, len(got), replies, got[len(got)-1].Body)
		}
	})
}
