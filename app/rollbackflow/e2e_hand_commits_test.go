package rollbackflow_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/rollbackpr"
)

// A person pushes a commit on top of ripcord's rollback commit while the
// rollback's job retries (its pull request is open, its release not stored
// yet). The retry must not force-push their work away: the branch stays at
// their commit, the open pull request is adopted, and the answer, a
// comment on the rollback pull request and the rollback_initiated audit
// event say that the branch has a commit made by hand that ripcord left in
// place.
func TestRollbackRetryKeepsCommitsMadeByHand(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newSceneWith(t, dbURL, app.Options{RetryBase: 100 * time.Millisecond})
		db := testdb.Open(t, dbURL)
		failRollbackInitiated(t, db)
		s.GitHub.PutFile(appRepo, "feature", "app.txt", "change")
		pr := s.GitHub.OpenPullRequest(appRepo, "octocat", "feature", "main", "Ship it")
		s.GitHub.SetPermission(appRepo, "octocat", "write")
		id := s.comment(pr, "octocat", "/ripcord rollback the canary is failing", false)
		s.WaitFor("the pull request opened and its job retrying", wait, func() bool {
			return len(s.GitHub.PullRequests(gitops)) == 1 && s.Int(`SELECT COUNT(*) FROM river_job
				WHERE kind = 'rollback_pull_request' AND attempt >= 2 AND state IN ('available', 'retryable', 'running')`) == 1
		})
		rb := s.GitHub.PullRequests(gitops)[0]
		head := s.GitHub.PutFile(gitops, rb.Head, "apps/checkout/prod/NOTES.md", "replicas pinned by hand\n")
		// An attempt running now may have read the branch before the push:
		// the store works again only once one started after it has failed.
		n := s.Int(`SELECT attempt FROM river_job WHERE kind = 'rollback_pull_request'`)
		s.WaitFor("an attempt that read the branch after the push to fail", wait, func() bool { return s.failedAttempts() > n })
		passRollbackInitiated(t, db)
		s.WaitFor("the rollback release stored", wait, func() bool {
			return s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback' AND pr_number > 0`) == 1
		})
		s.Settle(jobKinds...)
		if got, _ := s.GitHub.Ref(gitops, "heads/"+rb.Head); got != head {
			t.Errorf("branch %s = %s, want %s: the commit made by hand must stay", rb.Head, got, head)
		}
		if n := s.GitHub.Count("PATCH", "/repos/{owner}/{repo}/git/refs/{ref}"); n != 0 {
			t.Errorf("branch moves = %d, want none", n)
		}
		if prs := s.GitHub.PullRequests(gitops); len(prs) != 1 || prs[0].State != "open" {
			t.Errorf("pull requests = %+v, want the one open", prs)
		}
		said := "1 commit made by hand on top of ripcord's rollback commit"
		if got := s.replies(id); len(got) != 2 || !strings.Contains(got[1], said) || !strings.Contains(got[1], rollbackpr.ShortSHA(head)) {
			t.Errorf("replies = %q, want the answer to say the branch has %s, left in place at %s", got, said,
				rollbackpr.ShortSHA(head))
		}
		if got := s.botComments(rb.Number); len(got) != 1 || !strings.Contains(got[0], said) {
			t.Errorf("ripcord's comments on %s#%d = %q, want one saying it has %s", gitops, rb.Number, got, said)
		}
		if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE type = 'rollback_initiated' AND release_id = 'r3:prod-eu/prod'
			AND message LIKE '%made by hand%'`); n != 1 {
			t.Errorf("rollback_initiated events on r3 saying commits made by hand were kept = %d, want 1", n)
		}
	})
}
