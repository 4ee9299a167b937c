package rollbackflow_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/rollbackpr"
)

// mergedEventOf is GitHub's pull_request closed delivery for pr of the
// GitOps repository, merged by octocat: its branch, head commit and title.
func (s *scene) mergedEventOf(pr githubtest.PullRequest) []byte {
	head, ok := s.GitHub.Ref(gitops, "heads/"+pr.Head)
	if !ok {
		s.T.Fatalf("branch %s of #%d not found", pr.Head, pr.Number)
	}
	return e2etest.Edit(s.T, s.mergedEvent(records.Record{PRNumber: pr.Number,
		PRURL: fmt.Sprintf("https://github.com/%s/pull/%d", gitops, pr.Number)}, time.Now().UTC()), func(m map[string]any) {
		p := m["pull_request"].(map[string]any)
		p["title"], p["merged_by"] = pr.Title, map[string]any{"login": "octocat"}
		h := p["head"].(map[string]any)
		h["ref"], h["sha"] = pr.Head, head
		h["repo"].(map[string]any)["full_name"] = gitops
	})
}

// mergeStale merges pull request pr, a stale rollback's, and checks what
// ripcord says of it: one new comment on it (besides the earlier ones)
// saying it was stale, what it deploys (deploys) over what runs (running),
// and that ripcord rolls nothing back; no rollback is opened by ripcord.
func (s *scene) mergeStale(pr githubtest.PullRequest, deploys, running string) {
	s.T.Helper()
	s.Settle(jobKinds...)
	before, prs := len(s.botComments(pr.Number)), len(s.GitHub.PullRequests(gitops))
	s.closePullRequest(pr.Number)
	s.Deliver("pull_request", s.mergedEventOf(pr))
	s.Settle(jobKinds...)
	got := s.botComments(pr.Number)
	if len(got) != before+1 {
		s.T.Fatalf("ripcord's comments on the merged stale #%d = %q, want one more than the %d before", pr.Number, got, before)
	}
	last := got[len(got)-1]
	for _, want := range []string{"stale", "merged", deploys, running, "rolls nothing back"} {
		if !strings.Contains(last, want) {
			s.T.Errorf("ripcord's comment on the merged stale #%d = %q, want it to say %q", pr.Number, last, want)
		}
	}
	if n := len(s.GitHub.PullRequests(gitops)); n != prs {
		s.T.Errorf("pull requests after the merge = %d, want %d: ripcord opens no rollback of its own", n, prs)
	}
}

// pullRequest is pull request number of the GitOps repository.
func (s *scene) pullRequest(number int) githubtest.PullRequest {
	s.T.Helper()
	for _, pr := range s.GitHub.PullRequests(gitops) {
		if pr.Number == number {
			return pr
		}
	}
	s.T.Fatalf("no pull request #%d in %s", number, gitops)
	return githubtest.PullRequest{}
}

// A withdrawn rollback superseded by r4 is reopened (ripcord says it is
// stale) and merged anyway: its release file now names r2's image, which
// deploys over r4. ripcord says so on the merged pull request and in the
// release's audit trail, naming both, and rolls nothing back.
func TestMergedSupersededRollbackSaysWhatItDeploys(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		old := s.reopenedSuperseded()

		s.mergeStale(s.pullRequest(old.PRNumber), old.Image, "r4:prod-eu/prod")
		if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE release_id = $1 AND type = 'manual_intervention_required'
			AND message LIKE '%merged%' AND message LIKE '%r4:prod-eu/prod%'`, old.ReleaseID); n != 1 {
			t.Errorf("audit events of %s saying it was merged over r4 = %d, want 1", old.ReleaseID, n)
		}
		if r, _ := s.release(old.ReleaseID); r.State != records.StateSuperseded {
			t.Errorf("merged stale rollback %s is %s, want still %s until the cluster reports it", old.ReleaseID, r.State,
				records.StateSuperseded)
		}
	})
}

// A rollback pull request whose job gave up (no release) is merged after
// r4 ran: r3, which it rolls back, no longer runs, so it deploys r2 over
// r4. ripcord says so on it and in r3's audit trail.
func TestMergedRollbackWithoutReleaseSaysWhatItDeploys(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		pr := s.giveUpUnrecorded(testdb.Open(t, dbURL))
		s.fact(7004, "success", "r4:prod-eu/prod", image(4), sha(4))

		s.mergeStale(pr, rollbackpr.ShortSHA(sha(2)), "r4:prod-eu/prod")
		if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE release_id = 'r3:prod-eu/prod'
			AND type = 'manual_intervention_required' AND message LIKE '%merged%' AND message LIKE '%r4:prod-eu/prod%'`); n != 1 {
			t.Errorf("audit events of r3 saying its rollback's pull request was merged over r4 = %d, want 1", n)
		}
	})
}

// As TestMergedRollbackWithoutReleaseSaysWhatItDeploys, with a commit a
// person pushed on top of ripcord's rollback commit: the merge still
// deploys r2 over r4, and ripcord, which finds its rollback commit under
// the person's, says so.
func TestMergedRollbackWithoutReleaseWithCommitsMadeByHandSaysWhatItDeploys(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		pr := s.giveUpUnrecorded(testdb.Open(t, dbURL))
		s.GitHub.PutFile(gitops, pr.Head, "apps/checkout/prod/NOTES.md", "replicas pinned by hand\n")
		s.fact(7004, "success", "r4:prod-eu/prod", image(4), sha(4))

		s.mergeStale(pr, rollbackpr.ShortSHA(sha(2)), "r4:prod-eu/prod")
		if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE release_id = 'r3:prod-eu/prod'
			AND type = 'manual_intervention_required' AND message LIKE '%merged%' AND message LIKE '%r4:prod-eu/prod%'`); n != 1 {
			t.Errorf("audit events of r3 saying its rollback's pull request was merged over r4 = %d, want 1", n)
		}
	})
}

// A pull request is merged once: the merged event of a stale rollback
// delivered again under a new id (GitHub signs the body, not the delivery
// id, so a captured one can be posted again) says nothing more, on the
// pull request or in the audit trail.
func TestMergedStaleRollbackPostedAgainSaysNothingMore(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		old := s.reopenedSuperseded()
		pr := s.pullRequest(old.PRNumber)
		s.Settle(jobKinds...)
		s.closePullRequest(pr.Number)
		merged := s.mergedEventOf(pr)
		s.Deliver("pull_request", merged)
		s.Settle(jobKinds...)
		said := len(s.botComments(pr.Number))
		noted := func() int {
			return s.Int(`SELECT COUNT(*) FROM audit_events WHERE release_id = $1 AND type = 'manual_intervention_required'
				AND message LIKE '%merged%'`, old.ReleaseID)
		}
		if noted() != 1 {
			t.Fatalf("audit events of %s saying it was merged = %d, want 1: the test shows nothing", old.ReleaseID, noted())
		}

		s.Deliver("pull_request", merged)
		s.Settle(jobKinds...)
		if got := s.botComments(pr.Number); len(got) != said {
			t.Errorf("ripcord's comments on #%d after its merged event was posted again = %d, want the %d before", pr.Number, len(got), said)
		}
		if n := noted(); n != 1 {
			t.Errorf("audit events of %s saying it was merged, after its merged event was posted again = %d, want 1", old.ReleaseID, n)
		}
	})
}
