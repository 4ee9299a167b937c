package rollbackflow_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// permissionRoute is the one GitHub call of the commands' permission check.
const permissionRoute = "/repos/{owner}/{repo}/collaborators/{username}/permission"

// GitHub signs a delivery's body, not its X-GitHub-Delivery id, so a signed
// `/ripcord rollback` comment someone captured can be posted again under a
// new id, and the intake stores it as a new delivery. A command comment
// runs once: posted again while its rollback is open, or after that
// rollback's pull request was closed, it opens nothing, answers nothing and
// asks GitHub nothing. A new comment with the same words is a new request,
// and opens a second rollback.
func TestRollbackCommentPostedAgainUnderANewDeliveryIDRunsNothing(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.GitHub.PutFile(appRepo, "feature", "app.txt", "change")
		pr := s.GitHub.OpenPullRequest(appRepo, "octocat", "feature", "main", "Ship it")
		s.GitHub.SetPermission(appRepo, "octocat", "write")
		const text = "/ripcord rollback the canary is failing"
		c := s.GitHub.AddComment(appRepo, pr, "octocat", text)
		body := s.IssueComment(e2etest.Comment{Repository: appRepo, Number: pr, ID: c.ID, User: "octocat", Body: text})
		s.Deliver("issue_comment", body)
		s.WaitFor("the pull request link", wait, func() bool { return len(s.replies(c.ID)) == 2 })
		s.Settle(jobKinds...)
		old := s.waitRelease(s.String(`SELECT release_id FROM records WHERE kind = 'rollback'`))

		s.replayed(t, "while its rollback is open", body)
		if n := len(s.GitHub.PullRequests(gitops)); n != 1 {
			t.Fatalf("pull requests after the comment posted again while its rollback is open = %d, want 1", n)
		}

		s.closePullRequest(old.PRNumber)
		s.Deliver("pull_request", s.closedEvent(old))
		s.WaitFor("the closed rollback's release to end", wait, func() bool {
			r, _ := s.release(old.ReleaseID)
			return r.State != records.StateOpened
		})
		s.replayed(t, "after its pull request was closed", body)
		if n := len(s.GitHub.PullRequests(gitops)); n != 1 {
			t.Errorf("pull requests after the comment posted again once its rollback was closed = %d, want 1", n)
		}
		if n := s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback'`); n != 1 {
			t.Errorf("rollback releases = %d, want 1: the old comment opened a new rollback", n)
		}
		if n := len(s.replies(c.ID)); n != 2 {
			t.Errorf("replies to the comment = %d, want the first two only", n)
		}

		again := s.comment(pr, "octocat", text, false)
		s.WaitFor("the new comment's pull request link", wait, func() bool { return len(s.replies(again)) == 2 })
		s.Settle(jobKinds...)
		if n := len(s.GitHub.PullRequests(gitops)); n != 2 {
			t.Errorf("pull requests after a new comment asked again = %d, want 2: a new comment is a new request", n)
		}
		if n := s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback'`); n != 2 {
			t.Errorf("rollback releases after a new comment asked again = %d, want 2", n)
		}
	})
}

// A refused command is done too: the comment of someone who could only
// read, posted again once they were given write, runs nothing. They ask
// again with a new comment.
func TestRefusedRollbackCommentPostedAgainAfterWriteWasGivenRunsNothing(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.GitHub.PutFile(appRepo, "feature", "app.txt", "change")
		pr := s.GitHub.OpenPullRequest(appRepo, "octocat", "feature", "main", "Ship it")
		s.GitHub.SetPermission(appRepo, "visitor", "read")
		const text = "/ripcord rollback"
		c := s.GitHub.AddComment(appRepo, pr, "visitor", text)
		body := s.IssueComment(e2etest.Comment{Repository: appRepo, Number: pr, ID: c.ID, User: "visitor", Body: text})
		s.Deliver("issue_comment", body)
		s.WaitFor("the refusal", wait, func() bool { return len(s.replies(c.ID)) == 1 })
		s.Settle(jobKinds...)

		s.GitHub.SetPermission(appRepo, "visitor", "write")
		s.replayed(t, "after its author was given write", body)
		if n := len(s.GitHub.PullRequests(gitops)); n != 0 {
			t.Errorf("pull requests after a refused comment was posted again = %d, want 0", n)
		}
		if n := s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback'`); n != 0 {
			t.Errorf("rollback releases after a refused comment was posted again = %d, want 0", n)
		}
		if n := len(s.replies(c.ID)); n != 1 {
			t.Errorf("replies to the comment = %d, want the refusal only", n)
		}
	})
}

// Two deliveries of one comment decided side by side, neither seeing the
// other's row yet (one drain round decides its deliveries at once): the
// command runs once. The drain is held on a third comment's permission
// check until both deliveries are queued, so the next round takes the two.
func TestRollbackCommentDeliveredTwiceAtOnceRunsOnce(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.GitHub.PutFile(appRepo, "feature", "app.txt", "change")
		pr := s.GitHub.OpenPullRequest(appRepo, "octocat", "feature", "main", "Ship it")
		s.GitHub.SetPermission(appRepo, "octocat", "write")
		s.GitHub.SetPermission(appRepo, "holder", "read")

		held, release := make(chan struct{}), make(chan struct{})
		var heldOnce sync.Once
		permission := s.GitHub.Default("GET " + permissionRoute)
		s.GitHub.Handle("GET "+permissionRoute, func(w http.ResponseWriter, r *http.Request, p map[string]string) {
			if p["username"] == "holder" {
				heldOnce.Do(func() { close(held) })
				select {
				case <-release:
				case <-time.After(wait):
				}
			}
			permission(w, r, p)
		})
		s.comment(pr, "holder", "/ripcord rollback", false)
		select {
		case <-held:
		case <-time.After(wait):
			t.Fatal("the holder's comment never asked for its permission")
		}

		const text = "/ripcord rollback the canary is failing"
		c := s.GitHub.AddComment(appRepo, pr, "octocat", text)
		body := s.IssueComment(e2etest.Comment{Repository: appRepo, Number: pr, ID: c.ID, User: "octocat", Body: text})
		ids := []string{s.Deliver("issue_comment", body), s.Deliver("issue_comment", body)}
		close(release)
		for _, id := range ids {
			s.waitDelivery(id)
		}
		s.WaitFor("the pull request link", wait, func() bool { return len(s.replies(c.ID)) == 2 })
		s.Settle(jobKinds...)

		if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE type = 'command_received'`); n != 1 {
			t.Errorf("commands received = %d, want 1: the comment ran once per delivery", n)
		}
		if n := len(s.GitHub.PullRequests(gitops)); n != 1 {
			t.Errorf("pull requests = %d, want 1", n)
		}
		if n := len(s.replies(c.ID)); n != 2 {
			t.Errorf("replies to the comment = %d, want 2", n)
		}
		ran := s.String(`SELECT delivery_id FROM comment_commands WHERE comment_id = $1`, c.ID)
		if ran != ids[0] && ran != ids[1] {
			t.Errorf("the comment's command was run by delivery %q, want one of %v", ran, ids)
		}
	})
}

// replayed posts body again under a new delivery id, waits until it was
// worked and the jobs settled, and checks that it asked GitHub for no
// permission and wrote no audit event: it ran nothing.
func (s *scene) replayed(t *testing.T, when string, body []byte) {
	t.Helper()
	s.Settle(jobKinds...)
	permissions := s.GitHub.Count("GET", permissionRoute)
	audits := s.Int(`SELECT COUNT(*) FROM audit_events`)
	id := s.Deliver("issue_comment", body)
	s.waitDelivery(id)
	s.Settle(jobKinds...)
	if n := s.GitHub.Count("GET", permissionRoute) - permissions; n != 0 {
		t.Errorf("the comment posted again %s asked GitHub for a permission %d times, want none", when, n)
	}
	if n := s.Int(`SELECT COUNT(*) FROM audit_events`) - audits; n != 0 {
		t.Errorf("the comment posted again %s wrote %d audit events, want none", when, n)
	}
	if state := s.String(`SELECT state FROM deliveries WHERE id = $1`, id); state != "ignored" {
		t.Errorf("the delivery of the comment posted again %s is %s, want ignored", when, state)
	}
}

// waitDelivery waits until delivery id was worked.
func (s *scene) waitDelivery(id string) {
	s.T.Helper()
	s.WaitFor("delivery "+id+" worked", wait, func() bool {
		return s.String(`SELECT state FROM deliveries WHERE id = $1`, id) != "queued"
	})
}
