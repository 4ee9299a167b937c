package gatesflow_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/gatesflow"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A gate run left in progress by an evaluation whose job will never finish
// it — one from before the upgrade that gave external ids a sequence, or an
// older evaluation's whose job was lost — must not spin for ever beside
// the gate's newer verdict: the newer evaluation completes it, superseded,
// pointing at its own run.
func TestANewerVerdictCompletesAnOlderEvaluationsRunLeftInProgress(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		e := e2etest.Start(t, dbURL, app.Options{})
		e.CheckRequestsAtCleanup(t)
		e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", twoGatesConfig)
		base, head, number := openBump(e, repo)
		prefix := fmt.Sprintf("%s#%d@%s checkout/prod ", repo, number, head)
		// Before the upgrade: no " seq=" in the external id.
		beforeUpgrade := e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/qa", HeadSHA: head, Status: "in_progress",
			ExternalID: prefix + "pull_request opened", Title: "evaluating"})
		// Another environment's run in progress is not this evaluation's to end.
		otherEnv := e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/qa", HeadSHA: head, Status: "in_progress",
			ExternalID: fmt.Sprintf("%s#%d@%s checkout/staging pull_request opened", repo, number, head), Title: "evaluating"})
		e.Install(repo)
		e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
		e.Settle()
		first := verdict(t, e, head, "ripcord/qa")
		superseded(t, e, beforeUpgrade.ID, first)
		if cr := run(e, otherEnv.ID); cr.Status != "in_progress" {
			t.Errorf("another environment's run in progress was changed: %+v", cr)
		}

		// An older evaluation's run whose job is gone, then a Re-run.
		lost := e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/itsm", HeadSHA: head, Status: "in_progress",
			ExternalID: fmt.Sprintf("%spull_request synchronize seq=%d", prefix, gatesflow.EvaluationSeq(first.ExternalID)), Title: "evaluating"})
		e.Deliver("check_run", rerequested(t, first, number, head, base, false))
		e.Settle()
		superseded(t, e, lost.ID, verdict(t, e, head, "ripcord/itsm"))
	})
}

// verdict is the newest completed run of the gate name on head that is
// not superseded.
func verdict(t *testing.T, e *e2etest.Env, head, name string) githubtest.CheckRun {
	t.Helper()
	runs := e.GitHub.CheckRuns(repo)
	for i := len(runs) - 1; i >= 0; i-- {
		if cr := runs[i]; cr.HeadSHA == head && cr.Name == name && cr.Status == "completed" && cr.Conclusion != "neutral" {
			return cr
		}
	}
	t.Fatalf("no verdict of %s on %s", name, head)
	return githubtest.CheckRun{}
}

func run(e *e2etest.Env, id int64) githubtest.CheckRun {
	for _, cr := range e.GitHub.CheckRuns(repo) {
		if cr.ID == id {
			return cr
		}
	}
	return githubtest.CheckRun{}
}

// superseded checks that the run id was completed neutral, pointing at the
// newer verdict.
func superseded(t *testing.T, e *e2etest.Env, id int64, newer githubtest.CheckRun) {
	t.Helper()
	cr := run(e, id)
	if cr.Status != "completed" || cr.Conclusion != "neutral" || cr.Title != "Superseded by a newer evaluation" ||
		!strings.HasSuffix(cr.Summary, fmt.Sprintf("/runs/%d", newer.ID)) {
		t.Errorf("run %d (%s) beside the newer verdict %d: %s %s %q %q, want completed neutral, superseded, linking to it",
			id, cr.ExternalID, newer.ID, cr.Status, cr.Conclusion, cr.Title, cr.Summary)
	}
}
