package rollbackflow_test

import (
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// A withdrawn rollback to r2 superseded by r4 is reopened: ripcord says it
// is stale and asks for a new rollback. The new rollback asked for goes to
// the same target, r2, whose branch name (environment and revision) is the
// stale pull request's. It must not take the stale pull request over: that
// pull request, its branch and what ripcord said on it stay as they are,
// and the new rollback gets a pull request of its own, on a branch of its
// own, which its record names.
func TestNewRollbackToTheSameTargetLeavesAReopenedStalePullRequest(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		old := s.reopenedSuperseded()
		stale := s.pullRequest(old.PRNumber)
		staleHead, _ := s.GitHub.Ref(gitops, "heads/"+stale.Head)

		if status, out := s.postRollbackTo("r2:prod-eu/prod"); status != 202 {
			t.Fatalf("the new rollback to r2 = %d %s, want 202: the stale pull request holds nothing", status, out)
		}
		s.Settle(jobKinds...)
		rec := s.waitRelease(s.String(`SELECT release_id FROM records WHERE kind = 'rollback' AND rollback_of = 'r4:prod-eu/prod'`))
		logCalls(t, s)
		if rec.RollbackOf != "r4:prod-eu/prod" || rec.PRNumber == old.PRNumber {
			t.Errorf("new rollback = %+v, want one of r4 with a pull request of its own, not #%d", rec, old.PRNumber)
		}
		if got, _ := s.GitHub.Ref(gitops, "heads/"+stale.Head); got != staleHead {
			t.Errorf("stale pull request's branch %s = %s, want it left at %s", stale.Head, got, staleHead)
		}
		if got := s.pullRequest(old.PRNumber); got.Title != stale.Title || got.Body != stale.Body || got.State != "open" {
			t.Errorf("stale pull request = %+v, want it left as it was: %+v", got, stale)
		}
		fresh := s.pullRequest(rec.PRNumber)
		if fresh.State != "open" || fresh.Head == stale.Head {
			t.Errorf("new rollback's pull request = %+v, want it open on a branch other than %s", fresh, stale.Head)
		}
		if n := len(s.botComments(old.PRNumber)); n != 1 {
			t.Errorf("ripcord's comments on the stale #%d = %d, want only the stale warning", old.PRNumber, n)
		}
	})
}

// As TestNewRollbackToTheSameTargetLeavesAReopenedStalePullRequest, asked
// for with /ripcord rollback: the new rollback goes to a branch of its own,
// which only its job can know (it asks GitHub who holds the usual one).
// The first answer, given before the job ran, must not name the stale
// pull request's branch as the one this rollback is opened on, nor must
// the API's answer to the same rollback asked again; the job's answer
// names the branch the pull request is on.
func TestFirstAnswerDoesNotNameABranchTheRollbackMayNotGet(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		appPR, old := s.rollbackByComment()
		s.closePullRequest(old.PRNumber)
		s.Deliver("pull_request", s.closedEvent(old))
		s.fact(7004, "success", "r4:prod-eu/prod", image(4), sha(4))
		s.WaitFor("the withdrawn rollback superseded by r4", wait, func() bool {
			r, _ := s.release(old.ReleaseID)
			return r.State == records.StateSuperseded
		})
		s.reopenPullRequest(old.PRNumber)
		s.Deliver("pull_request", s.reopenedEvent(old))
		s.wantStaleComment(old.PRNumber, old.Image, "r4:prod-eu/prod")
		stale := s.pullRequest(old.PRNumber)

		id := s.comment(appPR, "octocat", "/ripcord rollback to r2:prod-eu/prod r4 fails checkout", false)
		s.WaitFor("the new rollback's answer with its link", wait, func() bool { return len(s.replies(id)) == 2 })
		rec := s.waitRelease(s.String(`SELECT release_id FROM records WHERE kind = 'rollback' AND rollback_of = 'r4:prod-eu/prod'`))
		s.Settle(jobKinds...)
		fresh := s.pullRequest(rec.PRNumber)
		if fresh.Head == stale.Head {
			t.Fatalf("new rollback's pull request #%d is on the stale one's branch %s", fresh.Number, stale.Head)
		}
		got := s.replies(id)
		if strings.Contains(got[0], "`"+stale.Head+"`") {
			t.Errorf("first answer = %q, names %s, the stale pull request's branch: the rollback is opened on %s",
				got[0], stale.Head, fresh.Head)
		}
		if !strings.Contains(got[1], "`"+fresh.Head+"`") || !strings.Contains(got[1], rec.PRURL) {
			t.Errorf("job's answer = %q, want it to name %s and branch %s", got[1], rec.PRURL, fresh.Head)
		}
		status, out := s.postRollbackTo("r2:prod-eu/prod")
		if status != 202 || !strings.Contains(out, rec.PRURL) || strings.Contains(out, `"`+stale.Head+`"`) {
			t.Errorf("the same rollback asked through the API = %d %s, want 202 naming %s and not branch %s",
				status, out, rec.PRURL, stale.Head)
		}
	})
}
