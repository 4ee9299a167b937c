package rollbackflow_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/rollbackflow"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// staleClick is how the check run and the audit trail answer a click made
// on the check run as it stood before a later answer.
const staleClick = "Refused: this click was made on this check run as it stood before a later answer"

// closeRollback closes the rollback's pull request without merging, as a
// person does, and waits until its release has ended and its jobs ran.
func (s *scene) closeRollback(rec records.Record) {
	s.T.Helper()
	s.closePullRequest(rec.PRNumber)
	s.Deliver("pull_request", s.closedEvent(rec))
	s.WaitFor("the closed rollback's release to end", wait, func() bool {
		r, _ := s.release(rec.ReleaseID)
		return r.State != records.StateOpened
	})
	s.Settle(append(jobKinds, "release_check")...)
}

// refusedClicks counts the audit events of user's clicks on releaseID's
// button refused as made on an older state of its check run.
func (s *scene) refusedClicks(releaseID, user string) int {
	return s.Int(`SELECT COUNT(*) FROM audit_events WHERE release_id = $1 AND type = 'command_refused' AND message LIKE $2`,
		releaseID, "@"+user+" clicked Roll back: "+staleClick+"%")
}

// GitHub signs a delivery's body, not its X-GitHub-Delivery id, so a click
// someone captured can be posted again under a new id. Once the rollback
// the click opened was closed without merging, the click posted again must
// not open a second one in the clicker's name: its check run named the
// answers shown when it was clicked, and one was written since. A click on
// the check run as GitHub shows it now still rolls back.
func TestRollBackClickPostedAgainAfterItsRollbackClosedOpensNone(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.GitHub.SetPermission(appRepo, "octocat", "write")
		failed := "r3:prod-eu/prod"
		captured := s.clickBody(failed, "octocat")
		s.Deliver("check_run", captured)
		s.WaitFor("the rollback release", wait, func() bool {
			return s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback'`) == 1
		})
		s.Settle(append(jobKinds, "release_check")...)
		s.closeRollback(s.waitRelease(s.String(`SELECT release_id FROM records WHERE kind = 'rollback'`)))

		replay := s.Deliver("check_run", captured) // the click's bytes under a new delivery id
		s.Settle(append(jobKinds, "release_check")...)
		if got := s.String(`SELECT state FROM deliveries WHERE id = $1`, replay); got != "processed" {
			t.Fatalf("the click posted again ended %q, want processed", got)
		}
		if n := len(s.GitHub.PullRequests(gitops)); n != 1 {
			t.Fatalf("pull requests after the click was posted again = %d, want 1: the old click opened a new rollback", n)
		}
		if n := s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback'`); n != 1 {
			t.Fatalf("rollback releases = %d, want 1", n)
		}
		if n := s.refusedClicks(failed, "octocat"); n != 1 {
			t.Errorf("refusals of the click posted again in r3's audit trail = %d, want 1", n)
		}
		if cr, _ := s.releaseCheck(failed); !strings.Contains(cr.Summary, "@octocat: "+staleClick) {
			t.Errorf("r3's check run does not answer the click posted again:\n%s", cr.Summary)
		}

		s.click(failed, "octocat") // on the check run as it stands now
		s.WaitFor("a second rollback pull request", wait, func() bool { return len(s.GitHub.PullRequests(gitops)) == 2 })
	})
}

// A click refused because the clicker may only read, then the same person
// given write: their click on the check run as it stands (the refusal was
// written into it) rolls back. Their first click, posted again now, does
// not: it was answered.
func TestRollBackClickRefusedThenGrantedRollsBack(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.GitHub.SetPermission(appRepo, "octocat", "read")
		failed := "r3:prod-eu/prod"
		first := s.clickBody(failed, "octocat")
		s.Deliver("check_run", first)
		s.WaitFor("the refusal in the check run", wait, func() bool {
			cr, _ := s.releaseCheck(failed)
			return strings.Contains(cr.Summary, "Refused: @octocat has read access")
		})
		s.GitHub.SetPermission(appRepo, "octocat", "write")

		s.Deliver("check_run", first) // the refused click's bytes, after the grant
		s.WaitFor("the answer to the first click posted again", wait, func() bool {
			cr, _ := s.releaseCheck(failed)
			return strings.Contains(cr.Summary, staleClick)
		})
		s.Settle(append(jobKinds, "release_check")...)
		if n := s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback'`); n != 0 {
			t.Fatalf("the refused click posted again after the grant started %d rollbacks, want none", n)
		}

		s.click(failed, "octocat") // GitHub's payload names the check run as it stands now
		s.WaitFor("the rollback release", wait, func() bool {
			return s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback'`) == 1
		})
		rec := s.waitRelease(s.String(`SELECT release_id FROM records WHERE kind = 'rollback'`))
		if rec.RollbackOf != failed {
			t.Errorf("rollback release = %+v, want a rollback of r3", rec)
		}
		if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE release_id = $1 AND type = 'command_received' AND message LIKE '@octocat clicked Roll back: %'`, failed); n != 1 {
			t.Errorf("octocat's clicks that rolled back in r3's audit trail = %d, want 1", n)
		}
		s.WaitFor("the rollback pull request", wait, func() bool { return len(s.GitHub.PullRequests(gitops)) == 1 })
	})
}

// A release's check run written before its external id named the answers
// shown carries the release id alone. A click on one counts while GitHub
// shows it so, as it was clicked, and no click was answered since; a click
// made on it before it was written again does not, nor does the click that
// counted, posted again once its rollback was closed.
func TestRollBackClickOnACheckRunWithoutItsAnswersCountsWhileItIsShown(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.GitHub.SetPermission(appRepo, "octocat", "write")
		failed := "r3:prod-eu/prod"
		s.WaitFor("r3's check run with its button", wait, func() bool {
			cr, ok := s.releaseCheck(failed)
			return ok && cr.Status == "completed" && len(cr.Actions) == 1
		})
		shown, _ := s.releaseCheck(failed)

		// A click captured on this check run before it was written with
		// its answers: GitHub shows it marked now.
		unmarked := shown
		unmarked.ExternalID = failed
		s.Deliver("check_run", s.clickOn(unmarked, "octocat"))
		s.WaitFor("the refusal of the click on the check run as it stood", wait, func() bool {
			return s.refusedClicks(failed, "octocat") == 1
		})
		s.Settle(append(jobKinds, "release_check")...)
		if n := s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback'`); n != 0 {
			t.Fatalf("a click on a check run GitHub no longer shows so started %d rollbacks", n)
		}

		// A check run an earlier ripcord wrote, after that answer, and
		// never wrote again.
		old := s.GitHub.AddCheckRun(appRepo, githubtest.CheckRun{Name: rollbackflow.ReleaseCheckName, HeadSHA: sha(3), ExternalID: failed,
			Status: "completed", Conclusion: "action_required", Title: shown.Title, Summary: shown.Summary, Actions: shown.Actions,
			StartedAt: shown.StartedAt, CompletedAt: time.Now().UTC().Truncate(time.Second).Add(time.Second)})
		legacy := s.clickOn(old, "octocat")
		s.Deliver("check_run", legacy)
		s.WaitFor("the rollback release", wait, func() bool {
			return s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback'`) == 1
		})
		s.Settle(append(jobKinds, "release_check")...)
		s.closeRollback(s.waitRelease(s.String(`SELECT release_id FROM records WHERE kind = 'rollback'`)))

		s.Deliver("check_run", legacy) // posted again under a new delivery id
		s.WaitFor("the refusal of the click posted again", wait, func() bool {
			return s.refusedClicks(failed, "octocat") == 2
		})
		s.Settle(append(jobKinds, "release_check")...)
		if n := len(s.GitHub.PullRequests(gitops)); n != 1 {
			t.Errorf("pull requests after the click on the unmarked check run was posted again = %d, want 1", n)
		}
	})
}
