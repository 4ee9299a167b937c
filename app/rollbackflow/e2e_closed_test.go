package rollbackflow_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/app/rollbackflow"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// closePullRequest closes pull request number of the GitOps repository
// without merging it, as a person does on GitHub.
func (s *scene) closePullRequest(number int) {
	s.T.Helper()
	s.setPullRequestState(number, "closed")
}

// reopenPullRequest reopens pull request number of the GitOps repository,
// as a person does on GitHub.
func (s *scene) reopenPullRequest(number int) {
	s.T.Helper()
	s.setPullRequestState(number, "open")
}

func (s *scene) setPullRequestState(number int, state string) {
	s.T.Helper()
	req, err := http.NewRequest("PATCH", s.GitHub.URL()+"repos/"+gitops+"/pulls/"+strconv.Itoa(number),
		strings.NewReader(`{"state":"`+state+`"}`))
	if err != nil {
		s.T.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.T.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		s.T.Fatalf("set pull request #%d %s: %d", number, state, resp.StatusCode)
	}
}

// closedEvent is GitHub's pull_request closed delivery for rec's pull
// request, closed without merging.
func (s *scene) closedEvent(rec records.Record) []byte {
	return e2etest.Edit(s.T, githubtest.LoadPayload(s.T, "pull_request", "closed.payload.json"), func(m map[string]any) {
		m["installation"] = map[string]any{"id": githubtest.InstallationID}
		m["number"] = rec.PRNumber
		pr := m["pull_request"].(map[string]any)
		pr["number"], pr["merged"], pr["merge_commit_sha"], pr["html_url"], pr["state"] = rec.PRNumber, false, nil, rec.PRURL, "closed"
		pr["merged_by"], pr["merged_at"] = nil, nil
		r := m["repository"].(map[string]any)
		r["full_name"], r["name"] = gitops, "gitops"
	})
}

// A rollback pull request that a person closes without merging ends its
// release (aborted: it will never run), says so in the release's audit
// trail, and a new `/ripcord rollback` opens a new rollback instead of
// answering "open already" with the closed pull request — whether ripcord
// heard the close (the webhook) or missed it (GitHub is asked).
func TestClosedRollbackPullRequestLetsANewRollbackOpen(t *testing.T) {
	t.Parallel()
	for _, heard := range []bool{true, false} {
		name := "close heard"
		if !heard {
			name = "close missed"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				t.Parallel()
				s := newScene(t, dbURL)
				pr, old := s.rollbackByComment()

				s.closePullRequest(old.PRNumber)
				if heard {
					s.Deliver("pull_request", s.closedEvent(old))
					s.WaitFor("the closed rollback's release to end", wait, func() bool {
						r, _ := s.release(old.ReleaseID)
						return r.State != records.StateOpened
					})
				}

				again := s.comment(pr, "octocat", "/ripcord rollback still failing", false)
				s.WaitFor("the answers to the second command", wait, func() bool {
					r := s.replies(again)
					return len(r) == 2 || len(r) == 1 && strings.Contains(r[0], "open already")
				})
				s.Settle(jobKinds...)
				logCalls(t, s)
				got := s.replies(again)
				if strings.Contains(got[0], "open already") || len(got) != 2 || !strings.Contains(got[1], "Rollback pull request: ") {
					t.Fatalf("second command's replies = %q, want a new rollback pull request", got)
				}
				if r, _ := s.release(old.ReleaseID); r.State != records.StateAborted {
					t.Errorf("closed rollback %s is %s, want %s", old.ReleaseID, r.State, records.StateAborted)
				}
				if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE type = 'state_changed' AND release_id = $1
					AND message LIKE '%closed without merging%'`, old.ReleaseID); n != 1 {
					t.Errorf("state_changed events saying the pull request was closed on %s = %d, want 1", old.ReleaseID, n)
				}
				id := s.String(`SELECT release_id FROM records WHERE kind = 'rollback' AND state = 'opened'`)
				if id == "" || id == old.ReleaseID {
					t.Fatalf("new rollback release %q, want one other than %s", id, old.ReleaseID)
				}
				rec := s.waitRelease(id)
				if rec.RollbackOf != "r3:prod-eu/prod" || rec.PRNumber == old.PRNumber {
					t.Errorf("new rollback = %+v, want one of r3 with a new pull request", rec)
				}
				prs := s.GitHub.PullRequests(gitops)
				if len(prs) != 2 || prs[0].State != "closed" || prs[1].State != "open" || prs[1].Number != rec.PRNumber {
					t.Errorf("pull requests = %+v, want the closed one and a new open one", prs)
				}
			})
		})
	}
}

// POST /api/v1/rollbacks after the rollback's pull request was closed
// without merging (the close missed): a new rollback is accepted, not the
// closed one's job answered as a duplicate.
func TestRollbackThroughTheAPIAfterItsPullRequestWasClosed(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		post := func() rollbackflow.Accepted {
			status, out := s.Do("POST", "/api/v1/rollbacks", "application/json",
				[]byte(`{"app":"checkout","environment":"prod","reason":"r3 leaks memory"}`))
			var acc rollbackflow.Accepted
			if err := json.Unmarshal(out, &acc); status != 202 || err != nil {
				t.Fatalf("POST /api/v1/rollbacks = %d %s (%v)", status, out, err)
			}
			return acc
		}
		first := post()
		old := s.waitRelease(first.ReleaseID)
		s.Settle(jobKinds...)
		s.closePullRequest(old.PRNumber)

		again := post()
		if again.Duplicate || again.ReleaseID == first.ReleaseID {
			t.Fatalf("second answer = %+v, want a new rollback, not %s again", again, first.ReleaseID)
		}
		rec := s.waitRelease(again.ReleaseID)
		if r, _ := s.release(first.ReleaseID); r.State != records.StateAborted || rec.PRNumber == old.PRNumber {
			t.Errorf("closed rollback is %s and the new one has pull request #%d (old #%d)", r.State, rec.PRNumber, old.PRNumber)
		}
	})
}

// A rollback release that knows its pull request by repository and number
// only (no pr_url) is withdrawn too when that pull request is closed
// without merging: it is the pull request's as records.MarkMerged counts
// it (pr_url, or no pr_url and the same repository and number).
func TestClosedRollbackPullRequestWithdrawsAReleaseWithoutItsURL(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		_, old := s.rollbackByComment()
		if old.PRURL == "" || old.PRNumber == 0 {
			t.Fatalf("rollback release = %+v, want one with a pull request", old)
		}
		// The release names the pull request's repository, as MarkMerged
		// matches a release without pr_url.
		db := testdb.Open(t, dbURL)
		if _, err := db.Write.Exec(`UPDATE records SET pr_url = '', repository = $2 WHERE release_id = $1`,
			old.ReleaseID, gitops); err != nil {
			t.Fatal(err)
		}

		s.closePullRequest(old.PRNumber)
		s.Deliver("pull_request", s.closedEvent(old))
		s.Settle(jobKinds...)
		if r, _ := s.release(old.ReleaseID); r.State != records.StateAborted {
			t.Errorf("rollback %s of the closed pull request is %s, want %s", old.ReleaseID, r.State, records.StateAborted)
		}
	})
}

// rollbackByComment has octocat, who may write, ask for a rollback with
// /ripcord rollback on a pull request of the app, and returns that pull
// request and the rollback release once its pull request is open.
func (s *scene) rollbackByComment() (pr int, rollback records.Record) {
	s.T.Helper()
	s.GitHub.PutFile(appRepo, "feature", "app.txt", "change")
	pr = s.GitHub.OpenPullRequest(appRepo, "octocat", "feature", "main", "Ship it")
	s.GitHub.SetPermission(appRepo, "octocat", "write")
	first := s.comment(pr, "octocat", "/ripcord rollback the canary is failing", false)
	s.WaitFor("the pull request link", wait, func() bool { return len(s.replies(first)) == 2 })
	s.Settle(jobKinds...)
	return pr, s.waitRelease(s.String(`SELECT release_id FROM records WHERE kind = 'rollback'`))
}

// rollbackWithoutURL is a rollback release as POST /api/v1/releases opens
// one with its pull request's number only: its repository is the app's
// (a workflow's token vouches for that one only), and its pull request
// lives in the GitOps repository the config names.
func (s *scene) rollbackWithoutURL(dbURL string) records.Record {
	s.T.Helper()
	_, rec := s.rollbackByComment()
	if rec.PRURL == "" || rec.PRNumber == 0 || rec.Repository != appRepo {
		s.T.Fatalf("rollback release = %+v, want one of %s with a pull request", rec, appRepo)
	}
	db := testdb.Open(s.T, dbURL)
	if _, err := db.Write.Exec(`UPDATE records SET pr_url = '' WHERE release_id = $1`, rec.ReleaseID); err != nil {
		s.T.Fatal(err)
	}
	return rec // with its pr_url, for the events GitHub sends
}

// A rollback release recorded with the app's repository and no pr_url is
// the pull request of that number in the GitOps repository its config
// names: closing that pull request withdraws it, and closing the app
// repository's pull request of the same number does not.
func TestClosedGitOpsPullRequestWithdrawsItsRollbackWithoutURL(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		rec := s.rollbackWithoutURL(dbURL)

		other := e2etest.Edit(t, s.closedEvent(rec), func(m map[string]any) {
			m["pull_request"].(map[string]any)["html_url"] = fmt.Sprintf("https://github.com/%s/pull/%d", appRepo, rec.PRNumber)
			r := m["repository"].(map[string]any)
			r["full_name"], r["name"] = appRepo, "checkout"
		})
		s.Deliver("pull_request", other)
		s.Settle(jobKinds...)
		if r, _ := s.release(rec.ReleaseID); r.State != records.StateOpened {
			t.Fatalf("closing %s#%d made rollback %s %s, want it still %s: its pull request is in %s",
				appRepo, rec.PRNumber, rec.ReleaseID, r.State, records.StateOpened, gitops)
		}

		s.closePullRequest(rec.PRNumber)
		s.Deliver("pull_request", s.closedEvent(rec))
		s.Settle(jobKinds...)
		if r, _ := s.release(rec.ReleaseID); r.State != records.StateAborted {
			t.Errorf("rollback %s of the closed %s#%d is %s, want %s", rec.ReleaseID, gitops, rec.PRNumber, r.State, records.StateAborted)
		}
	})
}
