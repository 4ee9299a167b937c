package gatesflow_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/gatesflow"
	"github.com/ripcord/ripcord/internal/testdb"
)

// An evaluation queued before jobs had a spare attempt (with 5 attempts,
// or 8) gives up at its own last attempt: River would discard it after
// that one, and the run it showed in progress would spin for ever.
func TestAnEvaluationQueuedWithFewerAttemptsGivesUpAtItsLast(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		l := loseEvaluationToItsRetry(t, dbURL) // its retry waits for the test to run it
		e := l.e
		// Queued with 5 attempts in all, as the oldest evaluations were; the
		// next is its last, and GitHub refuses it too.
		retryNow(t, dbURL, "gates_evaluate", "attempt = 4, max_attempts = 5")
		waitForJob(e, "the evaluation to give up", 30*time.Second, "gates_evaluate", "cancelled", "discarded")
		e.Settle()
		if n := e.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'gates_evaluate' AND state = 'cancelled'`); n != 1 {
			t.Errorf("the evaluation's job was discarded, not ended by its give-up")
		}
		if cr := run(e, l.shown.ID); cr.Status != "completed" || cr.Conclusion != "failure" || cr.Title != gatesflow.GaveUpTitle ||
			!strings.Contains(cr.Summary, "after 5 attempts") {
			t.Errorf("the run the evaluation showed in progress: %s %s %q\n%s\nwant the give-up's failure after 5 attempts",
				cr.Status, cr.Conclusion, cr.Title, cr.Summary)
		}
	})
}

// A server that stops during an evaluation's last attempt interrupts it:
// River runs the job again, the attempt not counted, so the evaluation has
// not given up and its run is not failed; it gets its verdict when the
// job runs again.
func TestAnEvaluationTheServersStopInterruptsAtItsLastAttemptDoesNotGiveUp(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		l := loseEvaluationToItsRetry(t, dbURL) // its retry waits for the test to run it
		e := l.e
		// Its last attempt reads the pull request, then waits for the
		// policy service while the server stops.
		l.readable()
		retryNow(t, dbURL, "gates_evaluate", "attempt = 7")
		select {
		case <-l.held:
		case <-time.After(30 * time.Second):
			t.Fatal("the last attempt never asked the policy service")
		}
		l.answer()
		e.Restart()
		waitForJob(e, "the evaluation to end", 30*time.Second, "gates_evaluate", "completed", "cancelled")
		e.Settle()
		if n := e.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'gates_gave_up'`); n != 0 {
			t.Errorf("%d give-ups queued for an evaluation the stop interrupted, want none", n)
		}
		if cr := run(e, l.shown.ID); cr.Status != "completed" || cr.Conclusion != "success" {
			t.Errorf("the evaluation's run: %s %s %q, want the verdict of the attempt after the restart", cr.Status, cr.Conclusion, cr.Title)
		}
	})
}
