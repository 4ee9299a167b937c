package rolloutflow_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// reads are the GET requests GitHub received after the first skip: the
// config, a voter's permission, a check run. The reply to a comment and
// its reaction are writes, and a refusal is answered with them.
func reads(gh *githubtest.Server, skip int) []string {
	var out []string
	for _, r := range gh.Requests()[skip:] {
		if r.Method == http.MethodGet {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	return out
}

// An aborted rollout, once ended, waits for no vote: each way to approve
// it (the API, /ripcord approve, a click on a check run that shows the
// Approve button still) and an abort again is refused from ripcord's own
// records, saying it has ended, with nothing asked of GitHub (not the
// voter's permission, not the config, not the check run clicked).
func TestVotesAndAbortsOfAnEndedRolloutAskGitHubNothing(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := atFirstApproval(t, dbURL, e2eConfig, "write")
		s.settle()
		shown, _ := s.check()
		abort := "/api/v1/rollouts/" + url.PathEscape(s.id) + "/abort"
		if code, body := s.Do("POST", abort, "application/json", []byte(`{"user": "bob", "reason": "wrong build"}`)); code != http.StatusOK {
			t.Fatalf("abort answered %d %s", code, body)
		}
		s.WaitFor("the rollout to end", wait, func() bool { return s.status().Rollout.Status == rolloutflow.Failed })
		s.settle()
		// The stall scan River runs a few seconds after the start reads
		// the config of a release that waits for a first fact, as this one
		// does now its rollout has ended; its next run is a minute away.
		s.WaitFor("the stall scan run at the start", wait, func() bool {
			return s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'stall_scan' AND state = 'completed'`) > 0
		})
		number := s.GitHub.OpenPullRequest(repo, "alice", "main", "main", "release v1")
		before := len(s.GitHub.Requests())
		ended := "rollout " + s.id + " has ended (failed)"

		code, body := s.Do("POST", "/api/v1/rollouts/"+url.PathEscape(s.id)+"/approve", "application/json", []byte(`{"user": "bob"}`))
		if code != http.StatusConflict || !strings.Contains(string(body), ended+": no vote on it counts any more") {
			t.Errorf("approve of the ended rollout answered %d %s, want 409 saying %q", code, body, ended)
		}
		code, body = s.Do("POST", abort, "application/json", []byte(`{"user": "bob"}`))
		if code != http.StatusConflict || !strings.Contains(string(body), ended+": there is nothing left to abort") {
			t.Errorf("abort of the ended rollout answered %d %s, want 409 saying %q and that nothing is left to abort", code, body, ended)
		}

		cmd := s.GitHub.AddComment(repo, number, "bob", "/ripcord approve "+s.id)
		s.Deliver("issue_comment", s.IssueComment(e2etest.Comment{Repository: repo, Number: number, ID: cmd.ID, User: "bob",
			Body: cmd.Body}))
		// A check run written before clicks named their pause: a click on
		// it would have GitHub asked whether it is the one shown.
		unmarked := shown
		unmarked.ExternalID = s.id
		s.Deliver("check_run", clickOn(t, unmarked, "bob"))
		s.WaitFor("the reply to the comment", wait, func() bool {
			for _, c := range s.GitHub.Comments(repo) {
				if strings.Contains(c.Body, "Not approved: "+ended) {
					return true
				}
			}
			return false
		})
		s.settle()
		st := s.status()
		if !audited(st, "approval-refused", "@bob clicked Approve on a check run written before clicks named their pause: refused: "+ended) {
			t.Errorf("the click is not refused as of an ended rollout in the audit trail:\n%s", auditText(st))
		}
		if bobApprovals(st) != 0 || st.Rollout.Status != rolloutflow.Failed {
			t.Errorf("after the votes: %s, %d approvals by bob; want failed, none", st.Rollout.Status, bobApprovals(st))
		}
		if got := reads(s.GitHub, before); len(got) != 0 {
			t.Errorf("GitHub was asked about votes that cannot count: %q", got)
		}
	})
}

// A vote whose rollout ends while GitHub is asked for the voter's
// permission is refused by the vote itself, which reads the rollout again:
// the check before GitHub is not all that stands.
func TestAVoteOnARolloutThatEndsMeanwhileIsRefused(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := atFirstApproval(t, dbURL, e2eConfig, "write")
		s.settle()
		route := "GET /repos/{owner}/{repo}/collaborators/{username}/permission"
		permission := s.GitHub.Default(route)
		s.GitHub.Handle(route, func(w http.ResponseWriter, r *http.Request, p map[string]string) {
			if p["username"] == "bob" { // carol aborts while bob's permission is read
				if code, body := s.Do("POST", "/api/v1/rollouts/"+url.PathEscape(s.id)+"/abort", "application/json",
					[]byte(`{"user": "carol", "reason": "meanwhile"}`)); code != http.StatusOK {
					t.Errorf("carol's abort answered %d %s", code, body)
				}
			}
			permission(w, r, p)
		})
		code, body := s.Do("POST", "/api/v1/rollouts/"+url.PathEscape(s.id)+"/approve", "application/json", []byte(`{"user": "bob"}`))
		// The abort is stored, or carried out already.
		if code != http.StatusConflict || !strings.Contains(string(body), "no vote on it counts any more") ||
			!strings.Contains(string(body), "aborted by @carol (meanwhile)") && !strings.Contains(string(body), "has ended (failed)") {
			t.Errorf("approve answered %d %s, want 409: aborted by carol, no vote counts", code, body)
		}
		if n := s.GitHub.Count("GET", "/repos/{owner}/{repo}/collaborators/{username}/permission"); n != 1 {
			t.Errorf("bob's permission read %d times, want once", n)
		}
		s.settle()
		if st := s.status(); bobApprovals(st) != 0 {
			t.Errorf("bob's vote counted on a rollout aborted meanwhile:\n%s", auditText(st))
		}
	})
}
