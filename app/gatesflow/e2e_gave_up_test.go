package gatesflow_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/gatesflow"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// An evaluation whose job fails for good must not leave its gate spinning:
// here the server stops while the policy service has not answered (the
// gate shows in progress), and every later attempt is refused by GitHub
// (the App lost access to pull requests). The run it showed in progress
// is completed as a failure that says ripcord could not evaluate the gate,
// why, and how to evaluate it again; a gate that was not evaluated does
// not pass. A Re-run of that run, and one of the check suite, evaluate the
// gate again, in newer evaluations whose verdicts replace it.
func TestAnEvaluationWhoseJobFailsForGoodCompletesItsRunsInProgress(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		l := loseEvaluation(t, dbURL, 10*time.Millisecond)
		e := l.e
		waitForJob(e, "the evaluation to give up", 30*time.Second, "gates_evaluate", "cancelled")
		e.Settle()
		cr := run(e, l.shown.ID)
		if cr.Status != "completed" || cr.Conclusion != "failure" || cr.Title != gatesflow.GaveUpTitle ||
			!strings.Contains(cr.Summary, "after 8 attempts") || !strings.Contains(cr.Summary, "GitHub answered 403 Resource not accessible by integration") ||
			!strings.Contains(cr.Summary, "Re-run") {
			t.Fatalf("the run the lost evaluation showed in progress: %s %s %q\n%s\nwant a failure that says the gate could not be evaluated, why, and how to evaluate it again",
				cr.Status, cr.Conclusion, cr.Title, cr.Summary)
		}
		onlyTheRunShown(t, e)

		// GitHub answers again, and so does the policy service: a Re-run of
		// the failed run evaluates the gate again.
		l.recover()
		e.Deliver("check_run", rerequested(t, cr, l.number, l.head, l.base, false))
		e.Settle()
		again := verdict(t, e, l.head, "ripcord/policy-validation")
		if again.ID == cr.ID || again.Conclusion != "success" || gatesflow.EvaluationSeq(again.ExternalID) <= gatesflow.EvaluationSeq(cr.ExternalID) {
			t.Errorf("after the Re-run: %+v, want a success of a newer evaluation", again)
		}

		// So does a Re-run of the whole suite.
		e.Deliver("check_suite", suiteRerequested(t, l.number, l.head, l.base, false, false))
		e.Settle()
		suite := verdict(t, e, l.head, "ripcord/policy-validation")
		if suite.ID == again.ID || suite.Conclusion != "success" || !strings.Contains(suite.ExternalID, "check_suite rerequested") {
			t.Errorf("after the suite's Re-run: %+v, want a success of a newer evaluation", suite)
		}
		allCompleted(t, e)
	})
}

// A give-up whose evaluation knew its gates (it had read the config and
// the release) but never showed them in progress left them with no run
// at all: a required check of such a gate stayed "Expected — waiting" for
// ever. Here every attempt reads the release, then runs out of its time
// reading the values schema, before any verdict is queued. Each gate gets
// a run of the evaluation completed as the give-up's failure.
func TestAGiveUpMakesTheRunsOfTheGatesItKnewAndNeverShowed(t *testing.T) {
	// Not parallel: each attempt is to run out of its second reading
	// the schema, and the reads before it must fit in that second;
	// beside other tests they do not always (valuesSchemaNeverComes).
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		e, head, number := valuesSchemaNeverComes(t, dbURL)
		waitForJob(e, "the evaluation to give up", 60*time.Second, "gates_gave_up", "completed")
		e.Settle()
		runs := e.GitHub.CheckRuns(repo)
		names := map[string]bool{}
		for _, cr := range runs {
			names[cr.Name] = true
			if cr.HeadSHA != head || cr.Status != "completed" || cr.Conclusion != "failure" || cr.Title != gatesflow.GaveUpTitle ||
				!strings.Contains(cr.Summary, "after 8 attempts") || !strings.Contains(cr.Summary, "ran out of its") || !strings.Contains(cr.Summary, "Re-run") ||
				!strings.Contains(cr.ExternalID, fmt.Sprintf("%s#%d@%s checkout/prod pull_request opened seq=", repo, number, head)) {
				t.Errorf("%s: %s %s %q (%s)\n%s\nwant the give-up's failure, of the evaluation", cr.Name, cr.Status, cr.Conclusion, cr.Title, cr.ExternalID, cr.Summary)
			}
		}
		if len(runs) != 2 || !names["ripcord/values"] || !names["ripcord/qa"] {
			t.Errorf("runs after the give-up: %+v, want one of each gate the evaluation knew", runs)
		}
	})
}

// valuesSchemaNeverComes starts the server on a pull request (head, number)
// whose gates are values and qa, and delivers it: each attempt of its
// evaluation reads the pull request, the config and the release, then runs
// out of its time (a second) reading the values schema, before any verdict
// is queued.
func valuesSchemaNeverComes(t *testing.T, dbURL string) (e *e2etest.Env, head string, number int) {
	t.Helper()
	e = e2etest.Start(t, dbURL, app.Options{RetryBase: 10 * time.Millisecond, Gates: gatesflow.Options{EvaluateTimeout: time.Second}})
	e.CheckRequestsAtCleanup(t)
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", gatesConfig("values: {schema: deploy/release.schema.json}\nprocess:\n  qa: {labels: [qa-approved]}", "prod"))
	e.GitHub.PutFile(repo, "main", "deploy/release.schema.json", schema)
	var base string
	base, head, number = openBump(e, repo)
	e.Install(repo)
	const contents = "GET /repos/{owner}/{repo}/contents/{path}"
	e.GitHub.Handle(contents, func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		if strings.HasSuffix(r.URL.Path, "/release.schema.json") {
			<-r.Context().Done() // the schema never comes: the attempt runs out of its time
			return
		}
		e.GitHub.Default(contents)(w, r, p)
	})
	e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
	return e, head, number
}
