package rollbackflow_test

import (
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// An app's environment belongs to the repository of its first release
// (README, POST /api/v1/facts): a writer of another repository whose
// .github/ripcord.yml declares the same app and environment cannot roll
// it back with /ripcord rollback there. Before, ripcord opened a rollback
// pull request in the GitOps repository for checkout in prod, recorded
// with the other repository, which then answered the owner's own
// rollbacks with "open already".
func TestRollbackCommandFromAnotherRepositoryIsRefused(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		const other = "acme/impostor"
		s.GitHub.PutFile(other, "main", ".github/ripcord.yml", repoConfig)
		s.Install(other)
		s.GitHub.SetPermission(other, "mallory", "write")
		s.GitHub.PutFile(other, "feature", "x.txt", "x")
		pr := s.GitHub.OpenPullRequest(other, "mallory", "feature", "main", "x")

		body := "/ripcord rollback because I can"
		c := s.GitHub.AddComment(other, pr, "mallory", body)
		s.Deliver("issue_comment", s.IssueComment(e2etest.Comment{Repository: other, Number: pr, ID: c.ID, User: "mallory", Body: body}))
		s.Settle(jobKinds...)

		var got []string
		for _, cm := range s.GitHub.Comments(other) {
			if cm.User == githubtest.BotLogin {
				got = append(got, cm.Body)
			}
		}
		if len(got) != 1 || !strings.Contains(got[0], "Not rolling back") || !strings.Contains(got[0], appRepo) {
			t.Errorf("replies on %s#%d = %q, want one refusal naming the owner %s", other, pr, got, appRepo)
		}
		if n := s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback'`); n != 0 {
			t.Errorf("rollback releases = %d, want none", n)
		}
		if prs := s.GitHub.PullRequests(gitops); len(prs) != 0 {
			t.Errorf("pull requests in %s = %+v, want none", gitops, prs)
		}
	})
}

// A check run's Roll back button rolls back the release the check run is
// about, in that release's repository: a requested_action delivered from
// another repository that names it (a check run ripcord never drew there)
// must not act on it, nor write the clicker's name into its trail and its
// check run. Before, the click was checked against the other repository's
// permissions and config, and its answer went into acme/checkout's check
// run as "@mallory clicked Roll back".
func TestRollBackButtonFromAnotherRepositoryIsIgnored(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		const other = "acme/impostor"
		s.GitHub.PutFile(other, "main", ".github/ripcord.yml", repoConfig)
		s.Install(other)
		s.GitHub.SetPermission(other, "mallory", "admin")
		failed := "r3:prod-eu/prod"
		s.WaitFor("r3's check run with its button", wait, func() bool {
			cr, ok := s.releaseCheck(failed)
			return ok && cr.Status == "completed" && len(cr.Actions) == 1
		})

		s.Deliver("check_run", e2etest.Edit(t, s.clickBody(failed, "mallory"), func(m map[string]any) {
			repo := m["repository"].(map[string]any)
			repo["full_name"], repo["name"] = other, "impostor"
		}))
		s.Settle(append(jobKinds, "release_check")...)

		if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE message LIKE '%mallory%'`); n != 0 {
			t.Errorf("%d audit events name mallory's click on %s's release, want none", n, appRepo)
		}
		if cr, _ := s.releaseCheck(failed); strings.Contains(cr.Summary, "mallory") {
			t.Errorf("r3's check run in %s answers mallory's click from %s:\n%s", appRepo, other, cr.Summary)
		}
		if n := s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback'`); n != 0 {
			t.Errorf("rollback releases = %d, want none", n)
		}
	})
}
