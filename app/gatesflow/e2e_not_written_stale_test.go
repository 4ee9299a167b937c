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

// A verdict whose job fails for good still ends the gate's runs that older
// evaluations left in progress (one lost with its job, one from before
// external ids carried a sequence), as a written verdict does: nothing
// else would complete them, and they would spin beside the gate's run of
// the newer evaluation for ever. Whichever run stands for the gate, the
// failure that says the verdict could not be written, or the verdict
// GitHub took before refusing its later annotations, they are completed
// superseded, pointing at it.
func TestAVerdictThatFailsForGoodCompletesOlderEvaluationsRunsLeftInProgress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// start starts the server with a pull request whose one gate's
		// verdict job fails for good, an older evaluation's run of the
		// gate left in progress first (leftInProgress), and returns it.
		start func(t *testing.T, dbURL string) (*e2etest.Env, githubtest.CheckRun)
		// notWritten: the gate's run of the evaluation is the failure that
		// says its verdict could not be written, not the verdict.
		notWritten bool
	}{
		{"its run shown in progress is completed as a failure", func(t *testing.T, dbURL string) (*e2etest.Env, githubtest.CheckRun) {
			answer := make(chan struct{})
			policy := heldPolicy(t, answer)
			e := e2etest.Start(t, dbURL, app.Options{RetryBase: 10 * time.Millisecond, Gates: gatesflow.Options{SlowAfter: 50 * time.Millisecond}})
			e.CheckRequestsAtCleanup(t)
			e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", policyGateConfig(policy.URL, "prod"))
			base, head, number := openBump(e, repo)
			e.Install(repo)
			older := leftInProgress(e, "ripcord/policy-validation")
			refuseUpdates(e, func(body map[string]any) bool { return body["conclusion"] == "success" })
			e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
			e.WaitFor("the gate's run in progress", 20*time.Second, func() bool {
				runs := e.GitHub.CheckRuns(repo)
				return len(runs) == 2 && runs[1].Status == "in_progress"
			})
			close(answer)
			return e, older
		}, true},
		{"its run is created as a failure", func(t *testing.T, dbURL string) (*e2etest.Env, githubtest.CheckRun) {
			e := e2etest.Start(t, dbURL, app.Options{RetryBase: 10 * time.Millisecond})
			e.CheckRequestsAtCleanup(t)
			e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", gatesConfig("values: {schema: deploy/release.schema.json}", "prod"))
			e.GitHub.PutFile(repo, "main", "deploy/release.schema.json", schema)
			base, head, number := openBump(e, repo)
			e.Install(repo)
			older := leftInProgress(e, "ripcord/values")
			refuseCreates(e, func(body map[string]any) bool { return body["conclusion"] == "success" })
			e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
			return e, older
		}, true},
		{"its run holds the verdict GitHub took", func(t *testing.T, dbURL string) (*e2etest.Env, githubtest.CheckRun) {
			e := e2etest.Start(t, dbURL, app.Options{RetryBase: 10 * time.Millisecond})
			e.CheckRequestsAtCleanup(t)
			e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", gatesConfig("values: {schema: deploy/release.schema.json}", "prod"))
			e.GitHub.PutFile(repo, "main", "deploy/release.schema.json",
				`{"type":"object","properties":{"ports":{"type":"array","items":{"type":"integer","maximum":10}}}}`)
			base := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", release(digestA, 3))
			head := e.GitHub.PutFile(repo, "bump-checkout", "deploy/prod.yaml", release(digestB, 3)+"ports:\n"+strings.Repeat("  - 99\n", 60))
			number := e.GitHub.OpenPullRequest(repo, "octocat", "bump-checkout", "main", "bump checkout")
			e.Install(repo)
			older := leftInProgress(e, "ripcord/values")
			// GitHub refuses every update that adds the annotations past the first 50.
			refuseUpdates(e, func(body map[string]any) bool {
				out, _ := body["output"].(map[string]any)
				as, _ := out["annotations"].([]any)
				return len(as) > 0
			})
			e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
			return e, older
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				t.Parallel()
				e, older := tt.start(t, dbURL)
				waitForJob(e, "the verdict's job to fail for good", 60*time.Second, "gates_report", "cancelled")
				e.Settle()
				var ours githubtest.CheckRun
				for _, cr := range e.GitHub.CheckRuns(repo) {
					if cr.ID != older.ID {
						ours = cr
					}
				}
				if ours.Status != "completed" || (ours.Title == gatesflow.NotWrittenTitle) != tt.notWritten {
					t.Fatalf("the evaluation's run of the gate: %s %s %q, want it completed, the failure that says its verdict could not be written: %v",
						ours.Status, ours.Conclusion, ours.Title, tt.notWritten)
				}
				superseded(t, e, older.ID, ours)
			})
		})
	}
}

// leftInProgress adds, on the head of the pull request openBump opened, a
// run of the gate name that an older evaluation of checkout/prod left in
// progress: one from before external ids carried a sequence, which counts
// as older than any evaluation.
func leftInProgress(e *e2etest.Env, name string) githubtest.CheckRun {
	e.T.Helper()
	head, ok := e.GitHub.Ref(repo, "bump-checkout")
	prs := e.GitHub.PullRequests(repo)
	if !ok || len(prs) != 1 {
		e.T.Fatalf("head %q (%v), pull requests %+v: want the one openBump opened", head, ok, prs)
	}
	return e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: name, HeadSHA: head, Status: "in_progress",
		ExternalID: fmt.Sprintf("%s#%d@%s checkout/prod pull_request opened", repo, prs[0].Number, head), Title: "evaluating"})
}
