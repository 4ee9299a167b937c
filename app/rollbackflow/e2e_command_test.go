package rollbackflow_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

func (s *scene) comment(number int, user, body string, onIssue bool) int64 {
	s.T.Helper()
	c := s.GitHub.AddComment(appRepo, number, user, body)
	payload := s.IssueComment(e2etest.Comment{Repository: appRepo, Number: number, ID: c.ID, User: user, Body: body})
	if onIssue {
		payload = e2etest.Edit(s.T, payload, func(m map[string]any) { delete(m["issue"].(map[string]any), "pull_request") })
	}
	s.Deliver("issue_comment", payload)
	return c.ID
}

// openIssue opens an issue on the fake GitHub through its REST API.
func (s *scene) openIssue(title string) int {
	s.T.Helper()
	resp, err := http.Post(s.GitHub.URL()+"repos/"+appRepo+"/issues", "application/json", strings.NewReader(`{"title":"`+title+`"}`))
	if err != nil {
		s.T.Fatal(err)
	}
	defer resp.Body.Close()
	var is struct{ Number int }
	if err := json.NewDecoder(resp.Body).Decode(&is); err != nil || is.Number == 0 {
		s.T.Fatalf("open issue: %d %v", resp.StatusCode, err)
	}
	return is.Number
}

// replies are the App's answers to comment id, oldest first.
func (s *scene) replies(id int64) []string {
	var out []string
	for _, c := range s.GitHub.Comments(appRepo) {
		if c.User == githubtest.BotLogin && strings.Contains(c.Body, fmt.Sprintf("ripcord:reply comment-%d", id)) {
			out = append(out, c.Body)
		}
	}
	return out
}

// rollbackRefused has GitHub refuse every request of route with status,
// message and the headers given (name, value, …), and a person who may
// write comment `/ripcord rollback` on a pull request; it returns the
// comment's id.
func (s *scene) rollbackRefused(route string, status int, message string, header ...string) int64 {
	s.GitHub.Handle(route, func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
		w.Header().Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(status)
		body, _ := json.Marshal(map[string]string{"message": message})
		_, _ = w.Write(body)
	})
	s.GitHub.PutFile(appRepo, "feature", "app.txt", "change")
	pr := s.GitHub.OpenPullRequest(appRepo, "octocat", "feature", "main", "Ship it")
	s.GitHub.SetPermission(appRepo, "octocat", "write")
	return s.comment(pr, "octocat", "/ripcord rollback the canary is failing", false)
}

// answeredAtOnce waits for the reply to comment id that says the rollback
// pull request was not opened, and for its job to be cancelled after one
// attempt; it returns that reply.
func (s *scene) answeredAtOnce(t *testing.T, id int64) string {
	t.Helper()
	s.WaitFor("the answer that no pull request was opened", wait, func() bool { return len(s.replies(id)) == 2 })
	// The job records its cancellation just after the answer's transaction.
	s.WaitFor("the job cancelled", wait, func() bool {
		return s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'rollback_pull_request' AND state = 'cancelled'`) == 1
	})
	if n := s.Int(`SELECT attempt FROM river_job WHERE kind = 'rollback_pull_request'`); n != 1 {
		t.Errorf("the rollback pull request job ran %d attempts, want 1", n)
	}
	return s.replies(id)[1]
}

// /ripcord rollback in comments: a writer's opens the pull request and is
// answered with its link; a reader's is refused with the reason; a second
// one is told the rollback is open already; one on an issue works too.
func TestRollbackCommand(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.GitHub.PutFile(appRepo, "feature", "app.txt", "change")
		pr := s.GitHub.OpenPullRequest(appRepo, "octocat", "feature", "main", "Ship it")
		s.GitHub.SetPermission(appRepo, "octocat", "write")
		s.GitHub.SetPermission(appRepo, "visitor", "read")

		refused := s.comment(pr, "visitor", "/ripcord rollback", false)
		first := s.comment(pr, "octocat", "/ripcord rollback the canary is failing", false)
		s.WaitFor("the pull request link", wait, func() bool { return len(s.replies(first)) == 2 && len(s.replies(refused)) == 1 })
		s.Settle(jobKinds...)
		logCalls(t, s)
		if got := s.replies(refused)[0]; !strings.Contains(got, "Refused: @visitor has read access; `/ripcord rollback` needs write") {
			t.Errorf("reader's reply = %q", got)
		}
		got := s.replies(first)
		if !strings.Contains(got[0], "replaces `r3:prod-eu/prod` with `r2:prod-eu/prod`") || !strings.Contains(got[1], "Rollback pull request: https://github.com/acme/gitops/pull/") {
			t.Errorf("writer's replies = %q", got)
		}
		prs := s.GitHub.PullRequests(gitops)
		if len(prs) != 1 {
			t.Fatalf("pull requests = %d, want 1", len(prs))
		}
		id := fmt.Sprintf("rollback-%s-", sha(2)[:8])
		rec := s.waitRelease(s.String(`SELECT release_id FROM records WHERE kind = 'rollback'`))
		if !strings.HasPrefix(rec.ReleaseID, id) {
			t.Errorf("rollback release %s, want %s…", rec.ReleaseID, id)
		}
		checkPullRequest(t, s, rec, "the canary is failing")

		// The second click, here on an issue: no second pull request.
		issue := s.openIssue("checkout is slow")
		again := s.comment(issue, "octocat", "/ripcord rollback please", true)
		s.WaitFor("the answer on the issue", wait, func() bool { return len(s.replies(again)) == 1 })
		s.Settle(jobKinds...)
		if got := s.replies(again)[0]; !strings.Contains(got, "This rollback is open already") || !strings.Contains(got, prs[0].Title) && !strings.Contains(got, "/pull/") {
			t.Errorf("second rollback's reply = %q", got)
		}
		if n := len(s.GitHub.PullRequests(gitops)); n != 1 {
			t.Errorf("pull requests after a second command = %d, want 1", n)
		}
	})
}

// A release file without a configured field cannot be edited however often
// the job tries. The person who asked is told so at once, and the release
// rolled back says so in its audit trail, instead of the job retrying for
// hours and then being dropped without a word.
func TestRollbackCommandOnAReleaseFileItCannotEditIsAnswered(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.GitHub.PutFile(gitops, "main", releaseFile, strings.Replace(releaseYAML, "  ref: ghcr.io/acme/checkout:v3\n", "", 1))
		s.GitHub.PutFile(appRepo, "feature", "app.txt", "change")
		pr := s.GitHub.OpenPullRequest(appRepo, "octocat", "feature", "main", "Ship it")
		s.GitHub.SetPermission(appRepo, "octocat", "write")

		id := s.comment(pr, "octocat", "/ripcord rollback the canary is failing", false)
		s.WaitFor("the answer that no pull request was opened", wait, func() bool { return len(s.replies(id)) == 2 })
		if got := s.replies(id)[1]; !strings.Contains(got, "The rollback pull request was not opened") || !strings.Contains(got, "image.ref") {
			t.Errorf("second reply = %q, want it to say the pull request was not opened because of image.ref", got)
		}
		if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE type = 'rollback_failed' AND release_id = 'r3:prod-eu/prod'`); n != 1 {
			t.Errorf("rollback_failed events on r3 = %d, want 1", n)
		}
		if n := len(s.GitHub.PullRequests(gitops)); n != 0 {
			t.Errorf("pull requests = %d, want none", n)
		}
	})
}

// A 403 that is not GitHub's rate limit (here the App may not write to the
// GitOps repository) fails the same way however often the job tries: the
// person who asked is told at once, after one attempt rather than hours of
// retries, with GitHub's message and the permissions the App needs.
func TestRollbackCommandWithoutThePermissionIsAnsweredAtOnce(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		id := s.rollbackRefused("POST /repos/{owner}/{repo}/git/blobs", http.StatusForbidden, "Resource not accessible by integration")
		got := s.answeredAtOnce(t, id)
		for _, want := range []string{"The rollback pull request was not opened", "Resource not accessible by integration",
			"contents: write", "pull_requests: write"} {
			if !strings.Contains(got, want) {
				t.Errorf("second reply = %q, want it to say %q", got, want)
			}
		}
		if strings.Contains(got, "gave up after") {
			t.Errorf("second reply = %q, want it answered at once, not after retries", got)
		}
		if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE type = 'rollback_failed' AND release_id = 'r3:prod-eu/prod'`); n != 1 {
			t.Errorf("rollback_failed events on r3 = %d, want 1", n)
		}
	})
}

// A ruleset covering ripcord's rollback branches refuses the branch however
// often the job tries: the person who asked is told at once, after one
// attempt, with GitHub's message and the branch pattern to let through.
func TestRollbackCommandRefusedByABranchRuleIsAnsweredAtOnce(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		id := s.rollbackRefused("POST /repos/{owner}/{repo}/git/refs", http.StatusUnprocessableEntity,
			"Repository rule violations found\n\nCannot create ref due to creations being restricted.\n\n")
		got := s.answeredAtOnce(t, id)
		for _, want := range []string{"The rollback pull request was not opened", "creations being restricted",
			"branch protection rule or ruleset", "release-rollback-*"} {
			if !strings.Contains(got, want) {
				t.Errorf("second reply = %q, want it to say %q", got, want)
			}
		}
	})
}

// A failure that might pass on a retry (here GitHub's 502 on a write the
// client may not repeat) is retried; when the last attempt fails too, the
// person who asked is told, rather than the job being dropped unheard.
// (GitHub's rate limit is no such failure: the job waits for it,
// e2e_rate_limit_test.go.)
func TestRollbackCommandIsAnsweredWhenTheLastAttemptFails(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		id := s.rollbackRefused("POST /repos/{owner}/{repo}/git/blobs", http.StatusBadGateway, "Server Error")
		s.lastAttemptIsTheSecond(testdb.Open(t, dbURL))
		s.WaitFor("the answer that no pull request was opened", wait, func() bool { return len(s.replies(id)) == 2 })
		if got := s.replies(id)[1]; !strings.Contains(got, "The rollback pull request was not opened: gave up after ") ||
			!strings.Contains(got, "502") {
			t.Errorf("second reply = %q", got)
		}
		if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE type = 'rollback_failed' AND release_id = 'r3:prod-eu/prod'`); n != 1 {
			t.Errorf("rollback_failed events on r3 = %d, want 1", n)
		}
	})
}
