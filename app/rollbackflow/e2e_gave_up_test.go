package rollbackflow_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// The job fails before it opens anything, on every attempt: here GitHub
// will not say which branch of the GitOps repository is the default (the
// config names no rollback.base). On the last attempt the person who
// asked is told what failed, and the release rolled back gets its
// rollback_failed audit event, as when the pull request itself cannot be
// opened, instead of the job being dropped without a word.
func TestRollbackCommandIsAnsweredWhenTheDefaultBranchCannotBeReadAtTheLastAttempt(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.GitHub.PutFile(appRepo, "main", ".github/ripcord.yml", strings.Replace(repoConfig, "          base: main\n", "", 1))
		s.GitHub.Handle("GET /repos/{owner}/{repo}", func(w http.ResponseWriter, _ *http.Request, p map[string]string) {
			w.Header().Set("Content-Type", "application/json")
			if p["owner"]+"/"+p["repo"] == gitops {
				w.WriteHeader(http.StatusBadGateway)
				_, _ = w.Write([]byte(`{"message":"the GitOps repository is unwell"}`))
				return
			}
			_, _ = w.Write([]byte(`{"id":1,"name":"checkout","full_name":"acme/checkout","default_branch":"main"}`))
		})
		s.GitHub.PutFile(appRepo, "feature", "app.txt", "change")
		pr := s.GitHub.OpenPullRequest(appRepo, "octocat", "feature", "main", "Ship it")
		s.GitHub.SetPermission(appRepo, "octocat", "write")

		id := s.comment(pr, "octocat", "/ripcord rollback the canary is failing", false)
		s.lastAttemptIsTheSecond(testdb.Open(t, dbURL))
		s.WaitFor("the job to end", wait, func() bool {
			return s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'rollback_pull_request'
				AND state IN ('discarded', 'cancelled', 'completed')`) == 1
		})
		s.Settle(jobKinds...)
		got := s.replies(id)
		if len(got) != 2 || !strings.Contains(got[1], "The rollback pull request was not opened: gave up after ") ||
			!strings.Contains(got[1], "default branch of "+gitops) || !strings.Contains(got[1], "the GitOps repository is unwell") {
			t.Errorf("replies = %q, want the second to say the default branch of %s could not be read", got, gitops)
		}
		if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE type = 'rollback_failed' AND release_id = 'r3:prod-eu/prod'`); n != 1 {
			t.Errorf("rollback_failed events on r3 = %d, want 1", n)
		}
	})
}
