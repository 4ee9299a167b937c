package gatesflow_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/gatesflow"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// loseAtLastAttemptAndRescue leaves the job of kind (what it is, to name
// it), waiting for its retry, as a process that died during the job's 8th
// attempt (the last that evaluates or writes) leaves it: running, due when
// it was made, attempted an hour ago. The server is stopped first, then
// started again with a short retry, and the lost job let end. On
// PostgreSQL, River's rescuer takes such a job (it ran longer than the job
// may); on SQLite the server makes it available again at start.
func loseAtLastAttemptAndRescue(t *testing.T, e *e2etest.Env, dbURL, kind, what string) {
	t.Helper()
	e.Stop()
	db := testdb.Open(t, dbURL)
	q := `UPDATE river_job SET state = 'running', attempt = 8, scheduled_at = created_at WHERE kind = $1 AND state = 'retryable'`
	if db.Dialect == store.Postgres {
		q = `UPDATE river_job SET state = 'running', attempt = 8, scheduled_at = created_at, attempted_at = now() - interval '1 hour'
			WHERE kind = $1 AND state = 'retryable'`
	}
	res, err := db.Write.Exec(q, kind)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("%d %s jobs waiting for their retry, want 1", n, kind)
	}
	e.Options.RetryBase = 10 * time.Millisecond // the rescued job's retry
	e.Restart()
	waitForJob(e, "the lost "+what+"'s job to end", 60*time.Second, kind, "completed", "discarded", "cancelled")
	e.Settle()
}

// An evaluation lost with its process during its last attempt (a crash, a
// node gone) must still give up: on PostgreSQL River's rescuer discarded
// such a job without running it again, so the run it showed in progress
// spun for ever. It is rescued to an attempt that only gives up.
func TestAnEvaluationLostAtItsLastAttemptStillGivesUp(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		l := loseEvaluationToItsRetry(t, dbURL) // its retry waits: the test loses it first
		e := l.e
		loseAtLastAttemptAndRescue(t, e, dbURL, "gates_evaluate", "evaluation")
		cr := run(e, l.shown.ID)
		if !gaveUpAfterALostLastAttempt(cr) {
			t.Fatalf("the run the lost evaluation showed in progress: %s %s %q\n%s\nwant a failure that says the gate could not be evaluated, after 8 attempts, the last one lost",
				cr.Status, cr.Conclusion, cr.Title, cr.Summary)
		}
		onlyTheRunShown(t, e)
	})
}

// An evaluation lost with its process during its last attempt, whose
// pull request's head moved on meanwhile, failed the run it showed in
// progress on the old commit as a gate ripcord could not evaluate, sending
// the reviewer to re-run a commit ripcord no longer judges; an attempt
// that finds the head moved answers such a run. The give-up answers it so
// too: not evaluated, as the commit is no longer the head, naming the one
// that is; no run is made on the old commit and nothing is left to give up.
func TestAnEvaluationLostAtItsLastAttemptAfterTheHeadMovedAnswersItsRunsAsAnOldHead(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		l := loseEvaluationToItsRetry(t, dbURL) // its retry waits: the test loses it first
		e := l.e
		moved := e.GitHub.PutFile(repo, "bump-checkout", "deploy/prod.yaml", release(digestB, 4))
		l.readable() // GitHub answers again: only the process was lost
		loseAtLastAttemptAndRescue(t, e, dbURL, "gates_evaluate", "evaluation")
		cr := run(e, l.shown.ID)
		if cr.Status != "completed" || cr.Conclusion != "failure" || cr.Title != gatesflow.OldHeadTitle ||
			!strings.Contains(cr.Summary, "no longer the head") || !strings.Contains(cr.Summary, moved) {
			t.Errorf("the run the lost evaluation showed in progress on the old head: %s %s %q\n%s\nwant it completed failure as not evaluated, naming the current head %s",
				cr.Status, cr.Conclusion, cr.Title, cr.Summary, moved)
		}
		onlyTheRunShown(t, e)
		if n := e.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'gates_gave_up'`); n != 0 {
			t.Errorf("%d give-ups queued, want none: the old head's runs are answered", n)
		}
	})
}

// When GitHub refuses that answer, the runs the lost evaluation showed in
// progress are given up, as after a last attempt whose answer GitHub
// refused: a failure, not a spinner.
func TestAnEvaluationLostAtItsLastAttemptAfterTheHeadMovedGivesUpWhenItsAnswerIsRefused(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		l := loseEvaluationToItsRetry(t, dbURL) // its retry waits: the test loses it first
		e := l.e
		e.GitHub.PutFile(repo, "bump-checkout", "deploy/prod.yaml", release(digestB, 4))
		l.readable()
		refuseUpdates(e, func(body map[string]any) bool {
			out, _ := body["output"].(map[string]any)
			return out["title"] == gatesflow.OldHeadTitle
		})
		loseAtLastAttemptAndRescue(t, e, dbURL, "gates_evaluate", "evaluation")
		waitForJob(e, "the give-up to end", 30*time.Second, "gates_gave_up", "completed")
		e.Settle()
		cr := run(e, l.shown.ID)
		if !gaveUpAfterALostLastAttempt(cr) {
			t.Errorf("the run of the lost evaluation whose answer GitHub refused: %s %s %q\n%s\nwant the give-up's failure, after 8 attempts, the last one lost",
				cr.Status, cr.Conclusion, cr.Title, cr.Summary)
		}
		onlyTheRunShown(t, e)
	})
}

// An evaluation lost with its process during its last attempt knew its
// gates only in memory: its give-up completed the run it showed in
// progress, but made none of a gate it never showed (a quick one, whose
// verdict waits for the slow gate's), so a required check of that gate
// waited "Expected" for ever, unlike after a last attempt that failed. The
// give-up reads the pull request, the config and the release again to
// learn them, and each gets a run of the evaluation, failed as the
// give-up's.
func TestAnEvaluationLostAtItsLastAttemptMakesTheRunsOfTheGatesItNeverShowed(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		l := loseEvaluationWith(t, dbURL, time.Hour, "qa: {labels: [qa-approved]}") // its retry waits: the test loses it first
		e := l.e
		waitForJob(e, "the evaluation's refused attempt", 30*time.Second, "gates_evaluate", "retryable")
		l.readable() // GitHub answers again: only the process was lost
		loseAtLastAttemptAndRescue(t, e, dbURL, "gates_evaluate", "evaluation")
		runs := e.GitHub.CheckRuns(repo)
		names := map[string]bool{}
		for _, cr := range runs {
			names[cr.Name] = true
			if cr.HeadSHA != l.head || cr.ExternalID != l.shown.ExternalID || cr.Status != "completed" || cr.Conclusion != "failure" ||
				cr.Title != gatesflow.GaveUpTitle || !strings.Contains(cr.Summary, "after 8 attempts") || !strings.Contains(cr.Summary, "stopped before it ended") {
				t.Errorf("%s: %s %s %q (%s)\n%s\nwant the give-up's failure, of the evaluation (%s), after 8 attempts, the last one lost",
					cr.Name, cr.Status, cr.Conclusion, cr.Title, cr.ExternalID, cr.Summary, l.shown.ExternalID)
			}
		}
		if len(runs) != 2 || !names["ripcord/policy-validation"] || !names["ripcord/qa"] {
			t.Errorf("runs after the give-up: %+v, want the one shown in progress and one of the gate never shown", runs)
		}
	})
}

// A verdict's job lost with its process during its last attempt must
// still complete its run: on PostgreSQL River's rescuer discarded it
// without running it again, so notWritten never ran and the run the
// evaluation showed in progress spun for ever.
func TestAVerdictLostAtItsLastAttemptStillCompletesItsRun(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		// The verdict's retry waits: the test loses it first.
		e, shown := passAfterShowingRun(t, dbURL, app.Options{RetryBase: time.Hour}, func(e *e2etest.Env) {
			refuseUpdates(e, func(body map[string]any) bool { return body["conclusion"] == "success" })
		})
		waitForJob(e, "the verdict's refused attempt", 30*time.Second, "gates_report", "retryable")
		loseAtLastAttemptAndRescue(t, e, dbURL, "gates_report", "verdict")
		cr := run(e, shown.ID)
		if cr.Status != "completed" || cr.Conclusion != "failure" || cr.Title != gatesflow.NotWrittenTitle ||
			!strings.Contains(cr.Summary, "after 8 attempts") || !strings.Contains(cr.Summary, "stopped before it ended") {
			t.Fatalf("the run whose verdict's job was lost: %s %s %q\n%s\nwant a failure that says the verdict could not be written, after 8 attempts, the last one lost",
				cr.Status, cr.Conclusion, cr.Title, cr.Summary)
		}
	})
}

// A give-up's job lost with its process during its last attempt must still
// complete the runs its evaluation showed in progress: on PostgreSQL
// River's rescuer discarded it without running it again, and nothing else
// completes them, so the run spun for ever. The attempt the job keeps for
// that does the lost attempt's work again.
func TestAGiveUpLostAtItsLastAttemptStillCompletesItsRuns(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		l := loseEvaluationToItsRetry(t, dbURL) // its retries, and the give-up's, wait for the test
		e := l.e
		// The evaluation's last attempt is refused too, and gives up; GitHub
		// then refuses the give-up the evaluation's runs.
		const list = "GET /repos/{owner}/{repo}/commits/{ref}/check-runs"
		refuseAccess(e, list)
		retryNow(t, dbURL, "gates_evaluate", "attempt = 7")
		waitForJob(e, "the give-up's refused attempt", 30*time.Second, "gates_gave_up", "retryable")
		e.GitHub.Handle(list, e.GitHub.Default(list))

		loseAtLastAttemptAndRescue(t, e, dbURL, "gates_gave_up", "give-up")
		cr := run(e, l.shown.ID)
		if cr.Status != "completed" || cr.Conclusion != "failure" || cr.Title != gatesflow.GaveUpTitle ||
			!strings.Contains(cr.Summary, "after 8 attempts") || !strings.Contains(cr.Summary, "GitHub answered 403") {
			t.Fatalf("the run of the evaluation whose give-up was lost: %s %s %q\n%s\nwant the give-up's failure, after the evaluation's 8 attempts",
				cr.Status, cr.Conclusion, cr.Title, cr.Summary)
		}
		onlyTheRunShown(t, e)
	})
}

// A give-up GitHub refuses on each of its 8 attempts ends there: the
// attempt its job keeps for a lost one is not a ninth try.
func TestAGiveUpGitHubRefusesForGoodEndsAtItsEighthAttempt(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		l := loseEvaluation(t, dbURL, 10*time.Millisecond)
		e := l.e
		refuseAccess(e, "GET /repos/{owner}/{repo}/commits/{ref}/check-runs")
		waitForJob(e, "the give-up to fail for good", 60*time.Second, "gates_gave_up", "cancelled", "discarded")
		e.Settle()
		state, attempt := "", 0
		if err := testdb.Open(t, dbURL).Read.QueryRow(`SELECT state, attempt FROM river_job WHERE kind = 'gates_gave_up'`).Scan(&state, &attempt); err != nil {
			t.Fatal(err)
		}
		if state != "cancelled" || attempt != 8 {
			t.Errorf("the give-up's job ended %s after %d attempts, want cancelled after 8", state, attempt)
		}
	})
}

// gaveUpAfterALostLastAttempt reports whether cr is a give-up's failure
// after 8 attempts, the last one lost with its process.
func gaveUpAfterALostLastAttempt(cr githubtest.CheckRun) bool {
	return cr.Status == "completed" && cr.Conclusion == "failure" && cr.Title == gatesflow.GaveUpTitle &&
		strings.Contains(cr.Summary, "after 8 attempts") && strings.Contains(cr.Summary, "stopped before it ended")
}
