package rollbackflow_test

import (
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// GitHub signs a delivery's body, not its X-GitHub-Delivery id, so the
// closed delivery of a rollback pull request can be posted again under a
// new id after a person reopened it (and GitHub does not promise order:
// a close delivered after the reopen that followed it is as old). The
// reopened rollback keeps holding its environment: a rollback to another
// target is still refused naming it, and the close that came again is
// processed without effect. Closed for real afterwards, it lets go.
func TestClosedEventPostedAgainAfterTheReopenKeepsTheHold(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		_, old := s.rollbackByComment()
		closed := s.closedEvent(old) // the delivery body as captured
		s.closePullRequest(old.PRNumber)
		s.Deliver("pull_request", closed)
		s.WaitFor("the closed rollback's release to end", wait, func() bool {
			r, _ := s.release(old.ReleaseID)
			return r.Withdrawn()
		})
		s.reopenPullRequest(old.PRNumber)
		s.Deliver("pull_request", s.reopenedEvent(old))
		s.Settle(jobKinds...)
		if n := s.holds(old.ReleaseID); n != 1 {
			t.Fatalf("holds of reopened %s = %d, want 1", old.ReleaseID, n)
		}

		s.postedAgain("the closed event", closed)
		if n := s.holds(old.ReleaseID); n != 1 {
			t.Errorf("holds of reopened %s after its old close was posted again = %d, want 1", old.ReleaseID, n)
		}
		if status, out := s.postRollbackTo("r1:prod-eu/prod"); status != 409 || !strings.Contains(out, old.PRURL) {
			t.Fatalf("rollback to r1 with %s reopened and its old close posted again = %d %s, want 409 naming it",
				old.PRURL, status, out)
		}
		s.Settle(jobKinds...)
		if n := len(s.GitHub.PullRequests(gitops)); n != 1 {
			t.Errorf("pull requests in %s = %d, want the reopened one only", gitops, n)
		}

		// Closed again on GitHub, the same body is the truth: it lets go.
		s.closePullRequest(old.PRNumber)
		s.Deliver("pull_request", closed)
		s.Settle(jobKinds...)
		if n := s.holds(old.ReleaseID); n != 0 {
			t.Errorf("holds of %s closed again = %d, want 0", old.ReleaseID, n)
		}
		if status, out := s.postRollbackTo("r1:prod-eu/prod"); status != 202 {
			t.Fatalf("rollback to r1 with %s closed again = %d %s, want 202", old.PRURL, status, out)
		}
		s.Settle(jobKinds...)
	})
}

// The reopened delivery of a withdrawn rollback's pull request, posted
// again under a new id after the pull request was closed again, does not
// make the closed pull request hold its environment again.
func TestReopenedEventPostedAgainAfterTheCloseTakesNoHold(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		old := s.withdrawn()
		reopened := s.reopenedEvent(old) // the delivery body as captured
		s.reopenPullRequest(old.PRNumber)
		s.Deliver("pull_request", reopened)
		s.Settle(jobKinds...)
		if n := s.holds(old.ReleaseID); n != 1 {
			t.Fatalf("holds of reopened %s = %d, want 1", old.ReleaseID, n)
		}
		s.closePullRequest(old.PRNumber)
		s.Deliver("pull_request", s.closedEvent(old))
		s.Settle(jobKinds...)
		if n := s.holds(old.ReleaseID); n != 0 {
			t.Fatalf("holds of %s closed again = %d, want 0", old.ReleaseID, n)
		}

		s.postedAgain("the reopened event", reopened)
		if n := s.holds(old.ReleaseID); n != 0 {
			t.Errorf("holds of %s, closed, after its old reopening was posted again = %d, want 0", old.ReleaseID, n)
		}
	})
}

// holds is how many holds releaseID's reopened pull request has on its
// environment (rollback_reopened rows).
func (s *scene) holds(releaseID string) int {
	return s.Int(`SELECT COUNT(*) FROM rollback_reopened WHERE release_id = $1`, releaseID)
}

// postedAgain delivers body, a delivery captured before, again under a new
// id, and fails unless it was handled (processed, or ignored), not failed.
func (s *scene) postedAgain(what string, body []byte) {
	s.T.Helper()
	again := s.Deliver("pull_request", body)
	s.Settle(jobKinds...)
	if state := s.String(`SELECT state FROM deliveries WHERE id = $1`, again); state != "processed" && state != "ignored" {
		s.T.Fatalf("%s posted again ended %s, want it handled (processed or ignored), not failed", what, state)
	}
}
