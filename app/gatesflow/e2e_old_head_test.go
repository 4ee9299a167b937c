package gatesflow_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/gatesflow"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// An evaluation that showed its gate in progress, failed (GitHub refused
// it), and whose retry finds the pull request's head moved on must not
// leave that run spinning: a required check on the old commit would never
// end. The run is completed failure, as a gate that was not evaluated
// does not pass, saying that the commit is no longer the head, which is,
// and where its gates are. A newer evaluation's run in progress and a
// completed run on the old commit are left as they are.
func TestAnEvaluationWhoseHeadMovesBeforeItsRetryCompletesItsRunsInProgress(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		l := loseEvaluationToItsRetry(t, dbURL) // its retry waits for the test to run it
		e := l.e
		newer := e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/policy-validation", HeadSHA: l.head, Status: "in_progress",
			ExternalID: fmt.Sprintf("%s#%d@%s checkout/prod check_run rerequested newer seq=%d", repo, l.number, l.head, int64(1)<<40), Title: "evaluating"})
		older := e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/policy-validation", HeadSHA: l.head, Conclusion: "success",
			ExternalID: fmt.Sprintf("%s#%d@%s checkout/prod pull_request synchronize older seq=1", repo, l.number, l.head), Title: "allowed"})
		before := len(e.GitHub.CheckRuns(repo))

		moved := e.GitHub.PutFile(repo, "bump-checkout", "deploy/prod.yaml", release(digestB, 4))
		l.readable()
		retryNow(t, dbURL, "gates_evaluate", "")
		waitForJob(e, "the evaluation's retry to end", 30*time.Second, "gates_evaluate", "completed")
		e.Settle()

		cr := run(e, l.shown.ID)
		if cr.Status != "completed" || cr.Conclusion != "failure" || cr.Title != gatesflow.OldHeadTitle ||
			!strings.Contains(cr.Summary, "no longer the head") || !strings.Contains(cr.Summary, moved) {
			t.Errorf("the run the evaluation showed in progress: %s %s %q\n%s\nwant it completed failure, naming the current head %s",
				cr.Status, cr.Conclusion, cr.Title, cr.Summary, moved)
		}
		if got := run(e, newer.ID); got.Status != "in_progress" || got.Updates != 0 {
			t.Errorf("a newer evaluation's run: %s, %d updates, want it left alone", got.Status, got.Updates)
		}
		if got := run(e, older.ID); got.Conclusion != "success" || got.Updates != 0 {
			t.Errorf("a completed run: %s, %d updates, want it left alone", got.Conclusion, got.Updates)
		}
		if n := len(e.GitHub.CheckRuns(repo)); n != before {
			t.Errorf("%d check runs made on the old head, want none", n-before)
		}
	})
}

// The verdict of an evaluation that showed its gate in progress is written
// (by a job of an earlier attempt) after its retry, finding the head
// moved, listed the run in progress and before it looked for a verdict on
// its way: none is on its way any more, and the run is completed. The
// verdict is what the gate said of the commit while it was the head, so it
// stands; the answer goes beside it as its text.
func TestAnOldHeadAnswerLeavesAVerdictWrittenSinceItListedTheRun(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		l := loseEvaluationToItsRetry(t, dbURL) // its retry waits for the test to run it
		e := l.e
		moved := e.GitHub.PutFile(repo, "bump-checkout", "deploy/prod.yaml", release(digestB, 4))
		const list = "GET /repos/{owner}/{repo}/commits/{ref}/check-runs"
		answer := e.GitHub.Default(list)
		var once sync.Once
		e.GitHub.Handle(list, func(w http.ResponseWriter, r *http.Request, p map[string]string) {
			answer(w, r, p)
			once.Do(func() {
				e.GitHub.EditCheckRun(repo, l.shown.ID, func(cr *githubtest.CheckRun) {
					cr.Status, cr.Conclusion, cr.Title, cr.Summary = "completed", "success", "allowed", "the verdict"
				})
			})
		})
		l.readable()
		retryNow(t, dbURL, "gates_evaluate", "")
		waitForJob(e, "the evaluation's retry to end", 30*time.Second, "gates_evaluate", "completed")
		e.Settle()

		cr := run(e, l.shown.ID)
		if cr.Conclusion != "success" || cr.Title != "allowed" || cr.Summary != "the verdict" {
			t.Errorf("the run: %s %s %q\n%s\nwant the verdict written since it was listed kept", cr.Status, cr.Conclusion, cr.Title, cr.Summary)
		}
		if !strings.Contains(cr.Text, "no longer the head") || !strings.Contains(cr.Text, moved) {
			t.Errorf("the run's text: %q\nwant the answer, naming the current head %s", cr.Text, moved)
		}
	})
}

// "Re-run all checks" on ripcord's suite of a head the pull request has
// moved past did nothing, silently. As for Re-run on one run, nothing is
// evaluated and no run is made on the old commit; each gate run of the
// pull request on it says why and where the current head's gates are: a
// verdict keeps its conclusion and gets the answer as its text, a run left
// in progress is completed failure. Another pull request's run on the
// commit is not the click's to answer.
func TestRerunOfTheCheckSuiteOnAnOldHeadIsAnsweredInEachGateRun(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		e := e2etest.Start(t, dbURL, app.Options{})
		e.CheckRequestsAtCleanup(t)
		e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", twoGatesConfig)
		base, first, number := openBump(e, repo)
		e.Install(repo)
		e.Deliver("pull_request", pullRequest(t, number, first, base, "bump-checkout"))
		e.WaitFor("the itsm and qa gates", 20*time.Second, func() bool { return len(completedRuns(e, first)) == 2 })
		e.Settle()
		verdicts := completedRuns(e, first)
		lost := e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/qa", HeadSHA: first, Status: "in_progress",
			ExternalID: fmt.Sprintf("%s#%d@%s checkout/prod pull_request synchronize lost seq=1", repo, number, first), Title: "evaluating"})
		other := e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/qa", HeadSHA: first, Status: "in_progress",
			ExternalID: fmt.Sprintf("%s#%d@%s checkout/prod pull_request opened seq=1", repo, number+1, first), Title: "evaluating"})

		second := e.GitHub.PutFile(repo, "bump-checkout", "deploy/prod.yaml", release(digestB, 4))
		e.Deliver("pull_request", e2etest.Edit(t, pullRequest(t, number, second, base, "bump-checkout"), func(m map[string]any) {
			m["action"] = "synchronize"
		}))
		e.Settle()
		before := len(e.GitHub.CheckRuns(repo))

		e.Deliver("check_suite", suiteRerequested(t, number, first, base, false, false))
		e.Settle()
		if n := len(e.GitHub.CheckRuns(repo)); n != before {
			t.Errorf("%d check runs made by the suite's Re-run on the old head, want none", n-before)
		}
		for name, v := range verdicts {
			got := run(e, v.ID)
			if got.Conclusion != v.Conclusion || got.Title != v.Title || got.Summary != v.Summary ||
				!strings.Contains(got.Text, "Re-run all checks") || !strings.Contains(got.Text, "no longer the head") || !strings.Contains(got.Text, second) {
				t.Errorf("%s of the old head: %s %q\n%s\nwant its verdict (%s %q) kept and an answer naming the current head %s",
					name, got.Conclusion, got.Title, got.Text, v.Conclusion, v.Title, second)
			}
		}
		if got := run(e, lost.ID); got.Status != "completed" || got.Conclusion != "failure" || got.Title != gatesflow.OldHeadTitle ||
			!strings.Contains(got.Summary, second) {
			t.Errorf("the run of the old head left in progress: %s %s %q\n%s\nwant it completed failure, naming the current head %s",
				got.Status, got.Conclusion, got.Title, got.Summary, second)
		}
		if got := run(e, other.ID); got.Status != "in_progress" || got.Updates != 0 {
			t.Errorf("another pull request's run on the commit: %s, %d updates, want it left alone", got.Status, got.Updates)
		}
	})
}

// "Re-run all checks" on the suite of a head the pull request has moved
// past, clicked while that head's evaluation is still running (here held
// on the policy service), answers its run in progress: not evaluated, a
// failure. The evaluation, which read the pull request while the commit was
// its head, then writes its verdict: it was dropped (the run stayed the
// answer's failure), or, with annotations, their updates put the verdict's
// text on the answer's failure. The verdict is what the gate said of that
// commit: it replaces the answer wholly, as it replaces a give-up's.
func TestALateVerdictReplacesTheOldHeadAnswerInItsRun(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		answer := make(chan struct{})
		policy := heldPolicy(t, answer)
		e := e2etest.Start(t, dbURL, app.Options{Gates: gatesflow.Options{SlowAfter: 50 * time.Millisecond}})
		e.CheckRequestsAtCleanup(t)
		e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", policyGateConfig(policy.URL, "prod"))
		base, first, number := openBump(e, repo)
		e.Install(repo)
		e.Deliver("pull_request", pullRequest(t, number, first, base, "bump-checkout"))
		e.WaitFor("the gate's run in progress", 20*time.Second, func() bool {
			runs := e.GitHub.CheckRuns(repo)
			return len(runs) == 1 && runs[0].Status == "in_progress"
		})
		shown := e.GitHub.CheckRuns(repo)[0]

		second := e.GitHub.PutFile(repo, "bump-checkout", "deploy/prod.yaml", release(digestB, 4))
		e.Deliver("pull_request", e2etest.Edit(t, pullRequest(t, number, second, base, "bump-checkout"), func(m map[string]any) {
			m["action"] = "synchronize"
		}))
		e.Deliver("check_suite", suiteRerequested(t, number, first, base, false, false))
		e.WaitFor("the suite's Re-run to answer the run in progress", 20*time.Second, func() bool {
			return run(e, shown.ID).Title == gatesflow.OldHeadTitle
		})
		if cr := run(e, shown.ID); cr.Status != "completed" || cr.Conclusion != "failure" || !strings.Contains(cr.Summary, second) {
			t.Fatalf("the answered run: %s %s %q\n%s\nwant a failure naming the current head %s", cr.Status, cr.Conclusion, cr.Title, cr.Summary, second)
		}

		close(answer) // the evaluations of both heads pass
		e.Settle()
		want, ok := completedRuns(e, second)["ripcord/policy-validation"]
		if !ok || want.Conclusion != "success" {
			t.Fatalf("the current head's verdict: %+v, want a pass", want)
		}
		cr := run(e, shown.ID)
		if cr.Status != "completed" || cr.Conclusion != want.Conclusion || cr.Title != want.Title ||
			strings.Contains(cr.Summary, "no longer the head") || !strings.Contains(cr.Summary, want.Title) {
			t.Errorf("the old head's run after its verdict: %s %s %q\n%s\nwant the verdict (%s %q) in place of the answer",
				cr.Status, cr.Conclusion, cr.Title, cr.Summary, want.Conclusion, want.Title)
		}
		n := 0
		for _, r := range e.GitHub.CheckRuns(repo) {
			if r.HeadSHA == first {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d runs on the old head, want only the one the verdict completed", n)
		}
	})
}
