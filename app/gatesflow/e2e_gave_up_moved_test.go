package gatesflow_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/gatesflow"
	"github.com/ripcord/ripcord/internal/testdb"
)

// An evaluation whose last attempt failed before it could see the pull
// request's head move on (GitHub refused the pull request) gave up its run
// on the old commit as a gate ripcord could not evaluate, sending the
// reviewer to re-run a commit ripcord no longer judges, where a retry that
// finds the head moved, or the give-up of a lost last attempt, answer it
// as not evaluated, naming the head now. The give-up reads the pull
// request, as the lost attempt's does, and answers it so too; it makes no
// run on the old commit.
func TestAGiveUpWhoseHeadMovedMeanwhileAnswersItsRunsAsAnOldHead(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		l := loseEvaluationToItsRetry(t, dbURL) // its retry waits for the test to run it
		e := l.e
		moved := e.GitHub.PutFile(repo, "bump-checkout", "deploy/prod.yaml", release(digestB, 4))
		// GitHub refuses the last attempt the pull request, and answers
		// the give-up that follows.
		var reads atomic.Int32
		e.GitHub.Handle(readPull, func(w http.ResponseWriter, r *http.Request, p map[string]string) {
			if reads.Add(1) == 1 {
				forbidden(w)
				return
			}
			e.GitHub.Default(readPull)(w, r, p)
		})
		retryNow(t, dbURL, "gates_evaluate", "attempt = 7")
		waitForJob(e, "the give-up to end", 30*time.Second, "gates_gave_up", "completed")
		e.Settle()

		cr := run(e, l.shown.ID)
		if cr.Status != "completed" || cr.Conclusion != "failure" || cr.Title != gatesflow.OldHeadTitle ||
			!strings.Contains(cr.Summary, "no longer the head") || !strings.Contains(cr.Summary, moved) {
			t.Errorf("the run the evaluation showed in progress on the old head: %s %s %q\n%s\nwant it completed failure as not evaluated, naming the current head %s",
				cr.Status, cr.Conclusion, cr.Title, cr.Summary, moved)
		}
		onlyTheRunShown(t, e)
		if n := reads.Load(); n != 2 {
			t.Errorf("the pull request was read %d times after the restart, want 2: the last attempt's, refused, and the give-up's", n)
		}
	})
}

// A give-up whose evaluation's last attempt read the pull request knows
// its head: it does not read it again. Here every attempt reads the head,
// still the evaluation's commit, then runs out of its time.
func TestAGiveUpDoesNotReadAHeadItsEvaluationRead(t *testing.T) {
	// Not parallel: each attempt is to run out of its second reading
	// the schema, and the reads before it must fit in that second;
	// beside other tests they do not always (valuesSchemaNeverComes).
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		e, _, _ := valuesSchemaNeverComes(t, dbURL)
		waitForJob(e, "the evaluation to give up", 60*time.Second, "gates_gave_up", "completed")
		e.Settle()
		if n := e.GitHub.Count("GET", "/repos/{owner}/{repo}/pulls/{pull_number}"); n != 8 {
			t.Errorf("the pull request was read %d times, want 8: once by each of the evaluation's attempts, none by its give-up", n)
		}
		for _, cr := range e.GitHub.CheckRuns(repo) {
			if cr.Title != gatesflow.GaveUpTitle {
				t.Errorf("%s: %s %q, want the give-up's failure", cr.Name, cr.Conclusion, cr.Title)
			}
		}
	})
}

// forbidden answers 403, as GitHub answers an App that lost the
// permission.
func forbidden(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusForbidden)
	_, _ = w.Write([]byte(`{"message":"Resource not accessible by integration","documentation_url":"https://docs.github.com/rest"}`))
}
