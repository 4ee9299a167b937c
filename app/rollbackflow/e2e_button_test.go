package rollbackflow_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/app/rollbackflow"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// releaseCheck is the latest state of a release's ripcord/release check run,
// whose external id is the release id and the answers it shows
// ("<release id>/rollback-N"; the release id alone as ripcord wrote it
// before).
func (s *scene) releaseCheck(releaseID string) (githubtest.CheckRun, bool) {
	for _, cr := range s.GitHub.CheckRuns(appRepo) {
		if cr.Name == rollbackflow.ReleaseCheckName && (cr.ExternalID == releaseID || strings.HasPrefix(cr.ExternalID, releaseID+"/rollback-")) {
			return cr, true
		}
	}
	return githubtest.CheckRun{}, false
}

// click delivers a signed check_run requested_action for the release's
// Roll back button, as GitHub sends it.
func (s *scene) click(releaseID, user string) {
	s.T.Helper()
	s.Deliver("check_run", s.clickBody(releaseID, user))
}

// clickBody is the check_run requested_action payload of user's click on
// the Roll back button of the release's check run as GitHub shows it now,
// once it shows the button: GitHub's payload carries the check run as it
// stands, its external id with it.
func (s *scene) clickBody(releaseID, user string) []byte {
	s.T.Helper()
	var shown githubtest.CheckRun
	s.WaitFor(releaseID+"'s check run with its button", wait, func() bool {
		cr, ok := s.releaseCheck(releaseID)
		shown = cr
		return ok && cr.Status == "completed" && len(cr.Actions) == 1 && cr.Actions[0].Identifier == rollbackflow.RollbackAction
	})
	return s.clickOn(shown, user)
}

// clickOn is the check_run requested_action payload of user's click on
// cr's Roll back button.
func (s *scene) clickOn(shown githubtest.CheckRun, user string) []byte {
	s.T.Helper()
	return e2etest.Edit(s.T, githubtest.LoadPayload(s.T, "check_run", "requested_action.payload.json"), func(m map[string]any) {
		cr := m["check_run"].(map[string]any)
		cr["id"], cr["name"], cr["external_id"], cr["head_sha"] = shown.ID, shown.Name, shown.ExternalID, shown.HeadSHA
		cr["status"], cr["conclusion"] = shown.Status, nil
		if shown.Conclusion != "" {
			cr["conclusion"] = shown.Conclusion
		}
		cr["started_at"], cr["completed_at"] = shown.StartedAt.UTC().Format(time.RFC3339), nil
		if !shown.CompletedAt.IsZero() {
			cr["completed_at"] = shown.CompletedAt.UTC().Format(time.RFC3339)
		}
		m["requested_action"] = map[string]any{"identifier": rollbackflow.RollbackAction}
		repo := m["repository"].(map[string]any)
		repo["full_name"], repo["name"] = appRepo, "checkout"
		m["sender"].(map[string]any)["login"] = user
		m["installation"] = map[string]any{"id": githubtest.InstallationID}
	})
}

func TestRollBackButton(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.GitHub.SetPermission(appRepo, "octocat", "write")
		s.GitHub.SetPermission(appRepo, "visitor", "read")
		failed := "r3:prod-eu/prod"

		s.WaitFor("r3's check run with its button", wait, func() bool {
			cr, ok := s.releaseCheck(failed)
			return ok && cr.Status == "completed"
		})
		cr, _ := s.releaseCheck(failed)
		if cr.HeadSHA != sha(3) || cr.Conclusion != "action_required" || len(cr.Actions) != 1 ||
			cr.Actions[0].Identifier != rollbackflow.RollbackAction || len(cr.Actions[0].Identifier) > 20 || len([]rune(cr.Actions[0].Description)) > 40 {
			t.Fatalf("r3's check run = %+v, want action_required on %s with one Roll back button", cr, sha(3))
		}
		if !strings.Contains(cr.Summary, "r2:prod-eu/prod") {
			t.Errorf("r3's check run should name r2 as the target:\n%s", cr.Summary)
		}
		s.WaitFor("r1's check run as superseded", wait, func() bool {
			r1, ok := s.releaseCheck("r1:prod-eu/prod")
			return ok && strings.Contains(r1.Title, "superseded")
		})
		if r1, _ := s.releaseCheck("r1:prod-eu/prod"); len(r1.Actions) != 0 || r1.Conclusion != "neutral" {
			t.Errorf("r1 was superseded: check run %+v, want neutral without buttons", r1)
		}

		s.click(failed, "visitor")
		s.WaitFor("the refusal in the check run", wait, func() bool {
			cr, _ := s.releaseCheck(failed)
			return strings.Contains(cr.Summary, "Refused: @visitor has read access")
		})
		if n := len(s.GitHub.PullRequests(gitops)); n != 0 {
			t.Fatalf("a reader's click opened %d pull requests", n)
		}

		s.click(failed, "octocat")
		s.WaitFor("the rollback release", wait, func() bool {
			return s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback'`) == 1
		})
		rec := s.waitRelease(s.String(`SELECT release_id FROM records WHERE kind = 'rollback'`))
		if rec.RollbackOf != failed || !strings.Contains(rec.RollbackReason, "Roll back button") {
			t.Errorf("rollback release = %+v, want it to roll back r3 because of the button", rec)
		}
		// The first click's job writes the pull request's link into the
		// check run when it is done; the second click's answer comes after.
		s.Settle(append(jobKinds, "release_check")...)
		s.click(failed, "octocat")
		s.WaitFor("the second click's answer", wait, func() bool {
			cr, _ := s.releaseCheck(failed)
			return strings.Contains(cr.Summary, "This rollback is open already")
		})
		if n := len(s.GitHub.PullRequests(gitops)); n != 1 {
			t.Errorf("pull requests after a second click = %d, want 1", n)
		}
	})
}

// A button stays on an older release's check run (r2's offers "to r1"),
// but r3 was deployed after it. Clicking it must not roll r3 back — least
// of all to r2, the release the person clicked to get rid of.
func TestRollBackButtonOnAReleaseNoLongerRunning(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.GitHub.SetPermission(appRepo, "octocat", "write")
		older := "r2:prod-eu/prod"
		s.WaitFor("r2's check run with its button", wait, func() bool {
			cr, ok := s.releaseCheck(older)
			return ok && cr.Status == "completed" && len(cr.Actions) == 1
		})

		s.click(older, "octocat")
		s.WaitFor("the answer in r2's check run", wait, func() bool {
			cr, _ := s.releaseCheck(older)
			return strings.Contains(cr.Summary, "Not rolling back")
		})
		cr, _ := s.releaseCheck(older)
		if !strings.Contains(cr.Summary, "r3:prod-eu/prod") {
			t.Errorf("the answer should name the release running now, r3:\n%s", cr.Summary)
		}
		if n := s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback'`); n != 0 {
			t.Errorf("a click on r2's button started %d rollbacks", n)
		}
		if n := len(s.GitHub.PullRequests(gitops)); n != 0 {
			t.Errorf("a click on r2's button opened %d pull requests", n)
		}
	})
}
