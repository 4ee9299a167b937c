package rollbackflow_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/rollbackflow"
	"github.com/ripcord/ripcord/internal/testdb"
)

// `/ripcord rollback` while the same rollback's job (queued by the API,
// which has no conversation to answer) has not opened its pull request yet:
// the command's job is a duplicate and is not queued, so the promised link
// would never be posted. The commenter is told instead that the rollback
// is being opened already, with the release to follow.
func TestRollbackCommandWhileTheSameRollbackIsBeingOpenedIsAnswered(t *testing.T) {
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
		var acc rollbackflow.Accepted
		if err := json.Unmarshal(out, &acc); status != 202 || err != nil {
			t.Fatalf("POST /api/v1/rollbacks = %d %s (%v)", status, out, err)
		}
		s.WaitFor("the API's job to fail an attempt", wait, func() bool { return s.failedAttempts() >= 1 })

		s.GitHub.PutFile(appRepo, "feature", "app.txt", "change")
		pr := s.GitHub.OpenPullRequest(appRepo, "octocat", "feature", "main", "Ship it")
		s.GitHub.SetPermission(appRepo, "octocat", "write")
		c := s.comment(pr, "octocat", "/ripcord rollback the canary is failing", false)
		s.WaitFor("two answers to the command", wait, func() bool { return len(s.replies(c)) == 2 })
		got := s.replies(c)
		if !strings.Contains(got[1], acc.ReleaseID) || !strings.Contains(got[1], "already") {
			t.Errorf("second reply = %q, want it to say rollback %s is being opened already", got[1], acc.ReleaseID)
		}
	})
}
