package rollbackflow_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/rollbackflow"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// postRollbackTo asks, through the API, for a rollback of checkout in prod
// to the release to, and returns the answer.
func (s *scene) postRollbackTo(to string) (int, string) {
	s.T.Helper()
	status, out := s.Do("POST", "/api/v1/rollbacks", "application/json",
		[]byte(`{"app":"checkout","environment":"prod","to":"`+to+`","reason":"r3 leaks memory"}`))
	return status, string(out)
}

// withdrawn asks for a rollback by comment and closes its pull request
// without merging, which withdraws its release.
func (s *scene) withdrawn() records.Record {
	s.T.Helper()
	_, old := s.rollbackByComment()
	s.closePullRequest(old.PRNumber)
	s.Deliver("pull_request", s.closedEvent(old))
	s.WaitFor("the closed rollback's release to end", wait, func() bool {
		r, _ := s.release(old.ReleaseID)
		return r.Withdrawn()
	})
	return old
}

// botComments are ripcord's comments on pull request number of the GitOps
// repository.
func (s *scene) botComments(number int) []string {
	var out []string
	for _, c := range s.GitHub.Comments(gitops) {
		if c.User == githubtest.BotLogin && c.Issue == number {
			out = append(out, c.Body)
		}
	}
	return out
}

// A rollback pull request closed without merging (its release withdrawn)
// and reopened by a person is open again: merging it deploys its rollback,
// so it holds the environment's one rollback pull request again. A
// rollback to another target is refused naming it, rather than opened
// beside it; its release stays withdrawn, and nothing is said on it. Once
// it is closed again, whether ripcord hears of it (the webhook) or not
// (GitHub is asked), the other rollback may be opened.
func TestReopenedRollbackHoldsItsEnvironmentAgain(t *testing.T) {
	t.Parallel()
	for _, heard := range []bool{true, false} {
		name := "second close heard"
		if !heard {
			name = "second close missed"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				t.Parallel()
				s := newScene(t, dbURL)
				old := s.withdrawn()

				s.reopenPullRequest(old.PRNumber)
				s.Deliver("pull_request", s.reopenedEvent(old))
				s.Settle(jobKinds...)
				if status, out := s.postRollbackTo("r1:prod-eu/prod"); status != 409 || !strings.Contains(out, old.PRURL) {
					t.Fatalf("rollback to r1 with %s reopened = %d %s, want 409 naming it", old.PRURL, status, out)
				}
				s.Settle(jobKinds...)
				if n := len(s.GitHub.PullRequests(gitops)); n != 1 {
					t.Errorf("pull requests in %s = %d, want the reopened one only", gitops, n)
				}
				if r, _ := s.release(old.ReleaseID); !r.Withdrawn() {
					t.Errorf("reopened rollback %s is %s, want it still withdrawn", old.ReleaseID, r.State)
				}
				if got := s.botComments(old.PRNumber); len(got) != 0 {
					t.Errorf("ripcord's comments on the reopened #%d = %q, want none: no other rollback holds the environment",
						old.PRNumber, got)
				}

				s.closePullRequest(old.PRNumber)
				if heard {
					s.Deliver("pull_request", s.closedEvent(old))
					s.Settle(jobKinds...)
				}
				status, out := s.postRollbackTo("r1:prod-eu/prod")
				if status != 202 {
					t.Fatalf("rollback to r1 with %s closed again = %d %s, want 202", old.PRURL, status, out)
				}
				s.WaitFor("the rollback to r1 with its pull request", wait, func() bool {
					return s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback' AND state = 'opened' AND pr_number > 0`) == 1
				})
				s.Settle(jobKinds...)
			})
		})
	}
}

// A withdrawn rollback's pull request (r3 back to r2) is reopened while
// another rollback of the environment holds it: a person's, to r1, whose
// job is still opening its pull request (GitHub fails it, and the job
// retries), so no record of it says it is a newer rollback yet. That one
// keeps the environment: ripcord says so on the reopened pull request,
// naming it, writes it to the withdrawn release's audit trail, and closes
// nothing. Once the other's pull request is open and then closed, the
// environment is held by nothing: the reopened one did not take it.
func TestReopenedRollbackWhileAnotherHoldsTheEnvironmentSaysSo(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newSceneWith(t, dbURL, app.Options{RetryBase: 100 * time.Millisecond})
		old := s.withdrawn()
		blobs := "POST /repos/{owner}/{repo}/git/blobs"
		s.GitHub.Handle(blobs, func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
			http.Error(w, `{"message":"Service Unavailable"}`, http.StatusServiceUnavailable)
		})
		status, out := s.postRollbackTo("r1:prod-eu/prod")
		var other rollbackflow.Accepted
		if err := json.Unmarshal([]byte(out), &other); status != 202 || err != nil {
			t.Fatalf("rollback to r1 = %d %s (%v), want 202", status, out, err)
		}
		s.WaitFor("the rollback to r1 failing to open its pull request", wait, func() bool {
			return s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'rollback_pull_request'
				AND attempt >= 1 AND state IN ('available', 'retryable', 'running')`) == 1
		})

		s.reopenPullRequest(old.PRNumber)
		s.Deliver("pull_request", s.reopenedEvent(old))
		s.WaitFor("ripcord's comment on the reopened pull request", wait, func() bool { return len(s.botComments(old.PRNumber)) > 0 })
		got := s.botComments(old.PRNumber)
		if len(got) != 1 || !strings.Contains(got[0], other.ReleaseID) || !strings.Contains(got[0], "being opened") {
			t.Errorf("ripcord's comments on the reopened #%d = %q, want one naming %s, being opened", old.PRNumber, got, other.ReleaseID)
		}
		if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE release_id = $1 AND type = 'manual_intervention_required'
			AND message LIKE '%reopened%' AND message LIKE '%'||$2||'%'`, old.ReleaseID, other.ReleaseID); n != 1 {
			t.Errorf("audit events of %s saying it was reopened while %s holds the environment = %d, want 1", old.ReleaseID, other.ReleaseID, n)
		}
		if r, _ := s.release(old.ReleaseID); !r.Withdrawn() {
			t.Errorf("reopened rollback %s is %s, want it still withdrawn", old.ReleaseID, r.State)
		}

		s.GitHub.Handle(blobs, s.GitHub.Default(blobs))
		rec := s.waitRelease(other.ReleaseID)
		s.Settle(jobKinds...)
		for _, pr := range s.GitHub.PullRequests(gitops) {
			if pr.State != "open" {
				t.Errorf("pull request #%d is %s, want both open: ripcord closes neither", pr.Number, pr.State)
			}
		}
		s.closePullRequest(rec.PRNumber)
		s.Deliver("pull_request", s.closedEvent(rec))
		s.WaitFor("the other rollback's release to end", wait, func() bool {
			r, _ := s.release(rec.ReleaseID)
			return r.Withdrawn()
		})
		if status, out := s.postRollbackTo("r1:prod-eu/prod"); status == 409 && strings.Contains(out, old.PRURL) {
			t.Errorf("rollback to r1 after the other closed = %d %s: the reopened %s took the environment", status, out, old.PRURL)
		}
		s.Settle(jobKinds...)
	})
}
