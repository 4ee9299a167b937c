package gatesflow_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/gatesflow"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

var twoGatesConfig = gatesConfig(`process:
  itsm: {body_field: 'CHG[0-9]{7}'}
  qa: {labels: [qa-approved]}`, "prod")

// "Re-run all checks" on ripcord's check suite (GitHub sends check_suite
// rerequested, no check_run) evaluates every gate of the commit again, in a
// new evaluation, also on a pull request from a fork, whose suite lists no
// pull request; another App's suite is left to that App.
func TestRerunOfTheCheckSuiteReevaluatesEveryGate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		fork     bool
		otherApp bool
	}{
		{"a branch of the repository", false, false},
		{"a fork", true, false},
		{"another App's suite", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := e2etest.Start(t, testdb.MigratedURL(t, "sqlite"), app.Options{})
			e.CheckRequestsAtCleanup(t)
			e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", twoGatesConfig)
			base, head, number := openBump(e, repo)
			e.Install(repo)
			e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
			e.WaitFor("the itsm and qa gates", 20*time.Second, func() bool { return len(completedRuns(e, head)) == 2 })
			e.Settle()
			first := e.GitHub.CheckRuns(repo)

			e.Deliver("check_suite", suiteRerequested(t, number, head, base, tt.fork, tt.otherApp))
			e.Settle()
			runs := e.GitHub.CheckRuns(repo)
			if tt.otherApp {
				if len(runs) != len(first) {
					t.Fatalf("another App's suite re-run made check runs: %+v", runs[len(first):])
				}
				return
			}
			again := runs[len(first):]
			if len(again) != 2 {
				t.Fatalf("runs after the suite's re-run: %+v, want one more per gate", again)
			}
			for _, cr := range again {
				if cr.HeadSHA != head || cr.Status != "completed" || !strings.Contains(cr.ExternalID, "check_suite rerequested") ||
					gatesflow.EvaluationSeq(cr.ExternalID) <= gatesflow.EvaluationSeq(first[0].ExternalID) {
					t.Errorf("%s after the re-run: %+v, want a completed run of a newer evaluation", cr.Name, cr)
				}
			}
			if again[0].Name == again[1].Name || again[0].ExternalID != again[1].ExternalID {
				t.Errorf("the re-run's runs %q (%s) and %q (%s), want both gates of one evaluation",
					again[0].Name, again[0].ExternalID, again[1].Name, again[1].ExternalID)
			}
		})
	}
}

// suiteRerequested is the check_suite event of a click on "Re-run all
// checks" on the suite of head of pull request number (head, base), made
// by this App or by another; from a fork GitHub lists no pull request in it.
func suiteRerequested(t *testing.T, number int, head, base string, fork, otherApp bool) []byte {
	return e2etest.Edit(t, githubtest.LoadPayload(t, "check_suite", "rerequested.payload.json"), func(m map[string]any) {
		m["installation"] = map[string]any{"id": githubtest.InstallationID}
		cs := m["check_suite"].(map[string]any)
		cs["head_sha"], cs["after"], cs["head_branch"] = head, head, "bump-checkout"
		if !otherApp {
			cs["app"].(map[string]any)["id"] = githubtest.AppID
		}
		cs["pull_requests"] = []any{}
		if !fork {
			cs["pull_requests"] = []any{map[string]any{"id": 1, "number": number, "url": "https://api.github.com/repos/" + repo + "/pulls/1",
				"head": map[string]any{"ref": "bump-checkout", "sha": head, "repo": map[string]any{"id": 1, "name": "checkout", "url": "https://api.github.com/repos/" + repo}},
				"base": map[string]any{"ref": "main", "sha": base, "repo": map[string]any{"id": 1, "name": "checkout", "url": "https://api.github.com/repos/" + repo}}}}
		}
		r := m["repository"].(map[string]any)
		r["full_name"], r["name"] = repo, "checkout"
		r["owner"].(map[string]any)["login"] = "acme"
	})
}
