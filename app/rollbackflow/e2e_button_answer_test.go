package rollbackflow_test

import (
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// The Roll back button answers in the check run it was clicked on:
// "Opening the pull request …; I will post the link here." The link must
// come there once the job has opened the pull request, as the command's
// reply comes in its conversation.
func TestRollBackButtonPostsThePullRequestLinkInTheCheckRun(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s := newScene(t, dbURL)
		s.GitHub.SetPermission(appRepo, "octocat", "write")
		failed := "r3:prod-eu/prod"
		s.WaitFor("r3's check run with its button", wait, func() bool {
			cr, ok := s.releaseCheck(failed)
			return ok && cr.Status == "completed" && len(cr.Actions) == 1
		})
		s.click(failed, sha(3), "octocat")
		s.WaitFor("the rollback release", wait, func() bool {
			return s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback'`) == 1
		})
		rec := s.waitRelease(s.String(`SELECT release_id FROM records WHERE kind = 'rollback'`))
		s.Settle(append(jobKinds, "release_check")...)
		if cr, _ := s.releaseCheck(failed); !strings.Contains(cr.Summary, rec.PRURL) {
			t.Errorf("r3's check run after the pull request opened does not link it (%s):\n%s", rec.PRURL, cr.Summary)
		}
	})
}

// A click whose pull request cannot be opened (the release file lacks a
// configured field) is told so in the check run it was clicked on,
// instead of "I will post the link here" staying there for ever.
func TestRollBackButtonWhosePullRequestCannotBeOpenedSaysSo(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s := newScene(t, dbURL)
		s.GitHub.PutFile(gitops, "main", releaseFile, strings.Replace(releaseYAML, "  ref: ghcr.io/acme/checkout:v3\n", "", 1))
		s.GitHub.SetPermission(appRepo, "octocat", "write")
		failed := "r3:prod-eu/prod"
		s.WaitFor("r3's check run with its button", wait, func() bool {
			cr, ok := s.releaseCheck(failed)
			return ok && cr.Status == "completed" && len(cr.Actions) == 1
		})
		s.click(failed, sha(3), "octocat")
		s.WaitFor("the rollback_failed audit event", wait, func() bool {
			return s.Int(`SELECT COUNT(*) FROM audit_events WHERE type = 'rollback_failed' AND release_id = $1`, failed) == 1
		})
		s.Settle(append(jobKinds, "release_check")...)
		if cr, _ := s.releaseCheck(failed); !strings.Contains(cr.Summary, "The rollback pull request was not opened") ||
			!strings.Contains(cr.Summary, "image.ref") {
			t.Errorf("r3's check run does not say the pull request was not opened, and why:\n%s", cr.Summary)
		}
	})
}
