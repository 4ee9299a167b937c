package rollbackflow_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// `/ripcord rollback to r1` while the rollback of r3 to r2 has its pull
// request open: another target gives another branch, so a second pull
// request would be in flight for one environment, and merging both deploys
// two rollbacks. The commenter is told which pull request is open and what
// to do; nothing is opened.
func TestRollbackCommandToAnotherTargetWhileOneIsOpenNamesIt(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		_, prURL, _ := openFirstRollback(t, s)
		jobs := s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'rollback_pull_request'`)

		s.GitHub.PutFile(appRepo, "feature", "app.txt", "change")
		pr := s.GitHub.OpenPullRequest(appRepo, "octocat", "feature", "main", "Ship it")
		s.GitHub.SetPermission(appRepo, "octocat", "write")
		c := s.comment(pr, "octocat", "/ripcord rollback to r1:prod-eu/prod r2 is slow too", false)
		s.WaitFor("the answer to the command", wait, func() bool { return len(s.replies(c)) >= 1 })
		s.Settle(jobKinds...)

		got := s.replies(c)
		if len(got) != 1 || !strings.Contains(got[0], prURL) || !strings.Contains(got[0], "close it") || !strings.Contains(got[0], "merge it") {
			t.Errorf("replies = %q, want one naming the open pull request %s and saying to merge it or close it first", got, prURL)
		}
		if n := len(s.GitHub.PullRequests(gitops)); n != 1 {
			t.Errorf("pull requests in %s = %d, want the one open", gitops, n)
		}
		if n := s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'rollback_pull_request'`); n != jobs {
			t.Errorf("rollback jobs = %d, want %d: nothing queued", n, jobs)
		}
	})
}

// POST /api/v1/rollbacks to another target while a rollback pull request
// of the environment is open: 409 naming it, nothing queued.
func TestRollbackAPIToAnotherTargetWhileOneIsOpenIsAConflict(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		_, prURL, _ := openFirstRollback(t, s)
		jobs := s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'rollback_pull_request'`)

		status, out := s.Do("POST", "/api/v1/rollbacks", "application/json",
			[]byte(`{"app":"checkout","environment":"prod","to":"r1:prod-eu/prod","reason":"r2 is slow too"}`))
		var e struct{ Error string }
		_ = json.Unmarshal(out, &e)
		if status != 409 || !strings.Contains(e.Error, prURL) || !strings.Contains(e.Error, "close it") {
			t.Errorf("POST to r1 = %d %s, want 409 naming the open pull request %s", status, out, prURL)
		}
		s.Settle(jobKinds...)
		if n := len(s.GitHub.PullRequests(gitops)); n != 1 {
			t.Errorf("pull requests in %s = %d, want the one open", gitops, n)
		}
		if n := s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'rollback_pull_request'`); n != jobs {
			t.Errorf("rollback jobs = %d, want %d: nothing queued", n, jobs)
		}
	})
}

// POST /api/v1/rollbacks to another target while the first rollback's job
// is still trying to open its pull request (GitHub is unwell): the second
// would open its own pull request beside the first once GitHub is back.
// It is refused naming the rollback being opened, and nothing is queued.
func TestRollbackAPIToAnotherTargetWhileOneIsBeingOpenedIsAConflict(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.GitHub.Handle("POST /repos/{owner}/{repo}/git/blobs", func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`{"message":"try again"}`))
		})
		status, out := s.Do("POST", "/api/v1/rollbacks", "application/json",
			[]byte(`{"app":"checkout","environment":"prod","reason":"r3 leaks memory"}`))
		var first struct {
			ReleaseID string `json:"release_id"`
		}
		if err := json.Unmarshal(out, &first); status != 202 || err != nil {
			t.Fatalf("POST /api/v1/rollbacks = %d %s (%v)", status, out, err)
		}
		s.WaitFor("the first job to fail an attempt", wait, func() bool { return s.failedAttempts() >= 1 })

		status, out = s.Do("POST", "/api/v1/rollbacks", "application/json",
			[]byte(`{"app":"checkout","environment":"prod","to":"r1:prod-eu/prod","reason":"r2 is slow too"}`))
		var e struct{ Error string }
		_ = json.Unmarshal(out, &e)
		if status != 409 || !strings.Contains(e.Error, first.ReleaseID) || !strings.Contains(e.Error, "being opened") {
			t.Errorf("POST to r1 = %d %s, want 409 naming the rollback %s being opened", status, out, first.ReleaseID)
		}
		if n := s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'rollback_pull_request'`); n != 1 {
			t.Errorf("rollback jobs = %d, want the first one only", n)
		}
	})
}
