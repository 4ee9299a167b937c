package gatesflow_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/gatesflow"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// "Re-run" on a gate's check run evaluates the gates again, also on a pull
// request from a fork: GitHub sends such a run's check_run with an empty
// pull_requests (the head branch is in another repository), and the pull
// request is then the one the run's external id names.
func TestRerunOfAGateReevaluatesAlsoForAForkPullRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		fork bool
	}{{"a branch of the repository", false}, {"a fork", true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := e2etest.Start(t, testdb.MigratedURL(t, "sqlite"), app.Options{})
			e.CheckRequestsAtCleanup(t)
			e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", gatesConfig("process:\n  qa: {labels: [qa-approved]}", "prod"))
			base, head, number := openBump(e, repo)
			e.Install(repo)
			e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
			e.WaitFor("the qa gate", 20*time.Second, func() bool { return len(completedRuns(e, head)) == 1 })
			first := completedRuns(e, head)["ripcord/qa"]

			e.Deliver("check_run", rerequested(t, first, number, head, base, tt.fork))
			e.Settle()
			var runs []githubtest.CheckRun
			for _, cr := range e.GitHub.CheckRuns(repo) {
				if cr.HeadSHA == head && cr.Name == "ripcord/qa" {
					runs = append(runs, cr)
				}
			}
			if len(runs) != 2 || runs[1].ExternalID == first.ExternalID || !strings.Contains(runs[1].ExternalID, "check_run rerequested") {
				t.Fatalf("ripcord/qa runs after the re-run: %+v, want a second one of a new evaluation", runs)
			}
		})
	}
}

// rerequested is the check_run event of a click on "Re-run" on run, a gate
// run of pull request number (head, base); from a fork GitHub lists no
// pull request in it.
func rerequested(t *testing.T, run githubtest.CheckRun, number int, head, base string, fork bool) []byte {
	return e2etest.Edit(t, githubtest.LoadPayload(t, "check_run", "rerequested.payload.json"), func(m map[string]any) {
		m["installation"] = map[string]any{"id": githubtest.InstallationID}
		cr := m["check_run"].(map[string]any)
		cr["id"], cr["name"], cr["head_sha"], cr["external_id"] = run.ID, run.Name, head, run.ExternalID
		cr["app"].(map[string]any)["id"] = githubtest.AppID
		// GitHub's example writes these as "2018-04-25 20:42:10";
		// its schema (and GitHub) say date-time.
		for _, a := range []map[string]any{cr["app"].(map[string]any), cr["check_suite"].(map[string]any)["app"].(map[string]any)} {
			a["created_at"], a["updated_at"] = "2018-04-25T20:42:10Z", "2018-04-25T20:42:10Z"
		}
		cr["pull_requests"] = []any{}
		if !fork {
			cr["pull_requests"] = []any{map[string]any{"id": 1, "number": number, "url": "https://api.github.com/repos/" + repo + "/pulls/1",
				"head": map[string]any{"ref": "bump-checkout", "sha": head, "repo": map[string]any{"id": 1, "name": "checkout", "url": "https://api.github.com/repos/" + repo}},
				"base": map[string]any{"ref": "main", "sha": base, "repo": map[string]any{"id": 1, "name": "checkout", "url": "https://api.github.com/repos/" + repo}}}}
		}
		r := m["repository"].(map[string]any)
		r["full_name"], r["name"] = repo, "checkout"
		r["owner"].(map[string]any)["login"] = "acme"
	})
}

// GitHub lists in a check_run every open pull request whose head is the
// run's commit or branch, in no promised order: here the release's branch
// is also proposed to another base, where it changes no release. "Re-run"
// on a gate run evaluates the pull request the run is of (its external id
// names it), not whichever GitHub lists first.
func TestRerunOfAGateReevaluatesItsOwnPullRequestWhenGitHubListsAnother(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		e := e2etest.Start(t, dbURL, app.Options{})
		e.CheckRequestsAtCleanup(t)
		e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", twoGatesConfig)
		base, head, number := openBump(e, repo)
		staging := e.GitHub.PutFile(repo, "staging", "deploy/prod.yaml", release(digestB, 3))
		other := e.GitHub.OpenPullRequest(repo, "octocat", "bump-checkout", "staging", "bump checkout on staging")
		e.Install(repo)
		e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
		e.WaitFor("the itsm and qa gates", 20*time.Second, func() bool { return len(completedRuns(e, head)) == 2 })
		e.Settle()
		first := completedRuns(e, head)["ripcord/qa"]
		before := len(e.GitHub.CheckRuns(repo))

		e.Deliver("check_run", e2etest.Edit(t, rerequested(t, first, number, head, base, false), func(m map[string]any) {
			cr := m["check_run"].(map[string]any)
			listed := cr["pull_requests"].([]any)
			cr["pull_requests"] = []any{map[string]any{"id": 2, "number": other, "url": "https://api.github.com/repos/" + repo + "/pulls/2",
				"head": map[string]any{"ref": "bump-checkout", "sha": head, "repo": map[string]any{"id": 1, "name": "checkout", "url": "https://api.github.com/repos/" + repo}},
				"base": map[string]any{"ref": "staging", "sha": staging, "repo": map[string]any{"id": 1, "name": "checkout", "url": "https://api.github.com/repos/" + repo}}},
				listed[0]}
		}))
		e.Settle()
		again := e.GitHub.CheckRuns(repo)[before:]
		if len(again) != 2 {
			t.Fatalf("runs after the Re-run: %+v, want both gates of pull request #%d evaluated again", again, number)
		}
		for _, cr := range again {
			if !strings.HasPrefix(cr.ExternalID, fmt.Sprintf("%s#%d@%s ", repo, number, head)) || !strings.Contains(cr.ExternalID, "check_run rerequested") {
				t.Errorf("%s after the Re-run: %s, want an evaluation of pull request #%d", cr.Name, cr.ExternalID, number)
			}
		}
	})
}

// "Re-run" on a gate run of a head the pull request has moved past did
// nothing, silently: the reviewer clicked and the run did not change. The
// gates judge a pull request's head, so no run is made on the old commit;
// the clicked run says why and where the current head's gates are. Its
// verdict, what the gate said of that commit, stays; a run of the old head
// still in progress (its evaluation lost) is completed as a failure, as a
// gate that was not evaluated does not pass.
func TestRerunOfAGateOnAnOldHeadIsAnsweredInItsRun(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		e := e2etest.Start(t, dbURL, app.Options{})
		e.CheckRequestsAtCleanup(t)
		e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", gatesConfig("process:\n  qa: {labels: [qa-approved]}", "prod"))
		base, first, number := openBump(e, repo)
		e.Install(repo)
		e.Deliver("pull_request", pullRequest(t, number, first, base, "bump-checkout"))
		e.Settle()
		old := completedRuns(e, first)["ripcord/qa"]
		// A run of the old head its evaluation never completed.
		lost := e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/qa", HeadSHA: first, Status: "in_progress",
			ExternalID: fmt.Sprintf("%s#%d@%s checkout/prod pull_request synchronize lost seq=1", repo, number, first), Title: "evaluating"})

		second := e.GitHub.PutFile(repo, "bump-checkout", "deploy/prod.yaml", release(digestB, 4))
		e.Deliver("pull_request", e2etest.Edit(t, pullRequest(t, number, second, base, "bump-checkout"), func(m map[string]any) {
			m["action"] = "synchronize"
		}))
		e.Settle()
		before := len(e.GitHub.CheckRuns(repo))

		e.Deliver("check_run", rerequested(t, old, number, first, base, false))
		e.Deliver("check_run", rerequested(t, lost, number, first, base, false))
		e.Settle()
		if n := len(e.GitHub.CheckRuns(repo)); n != before {
			t.Errorf("%d check runs made by the Re-runs on the old head, want none", n-before)
		}
		answered := run(e, old.ID)
		if answered.Status != "completed" || answered.Conclusion != old.Conclusion || answered.Title != old.Title ||
			!strings.Contains(answered.Text, "no longer the head") || !strings.Contains(answered.Text, second) {
			t.Errorf("the re-run run of the old head: %s %s %q\n%s\nwant its verdict (%s %q) kept and an answer naming the current head %s",
				answered.Status, answered.Conclusion, answered.Title, answered.Text, old.Conclusion, old.Title, second)
		}
		completed := run(e, lost.ID)
		if completed.Status != "completed" || completed.Conclusion != "failure" || completed.Title != gatesflow.OldHeadTitle ||
			!strings.Contains(completed.Summary, second) {
			t.Errorf("the re-run run of the old head left in progress: %s %s %q\n%s\nwant it completed failure, naming the current head %s",
				completed.Status, completed.Conclusion, completed.Title, completed.Summary, second)
		}
	})
}
