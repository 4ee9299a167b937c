package gatesflow_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/gatesflow"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A newer evaluation that reports the gate before the lost one gives up
// keeps its verdict: the lost evaluation's run, which the newer verdict
// completed superseded, is not turned into a failure, and no run is added.
func TestAGiveUpLeavesANewerEvaluationsVerdictAlone(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		l := loseEvaluationToItsRetry(t, dbURL) // its retry waits: the newer evaluation comes first
		e := l.e
		l.recover()
		e.Deliver("check_suite", suiteRerequested(t, l.number, l.head, l.base, false, false))
		e.WaitFor("the newer verdict", 30*time.Second, func() bool { return len(completedRuns(e, l.head)) == 1 })
		e.Settle("gates_report")
		newer := verdict(t, e, l.head, "ripcord/policy-validation")
		superseded(t, e, l.shown.ID, newer)

		// The lost evaluation's last attempt, refused again.
		l.refuse()
		retryNow(t, dbURL, "gates_evaluate", "attempt = 7")
		waitForJob(e, "the lost evaluation to give up", 30*time.Second, "gates_evaluate", "cancelled")
		e.Settle()
		superseded(t, e, l.shown.ID, newer)
		if got := verdict(t, e, l.head, "ripcord/policy-validation"); got.ID != newer.ID || got.Conclusion != "success" {
			t.Errorf("the gate's verdict after the give-up: %+v, want the newer evaluation's success", got)
		}
		if n := len(e.GitHub.CheckRuns(repo)); n != 2 {
			t.Errorf("%d check runs, want the lost evaluation's and the newer one's", n)
		}
		allCompleted(t, e)
	})
}

// An evaluation of two environments gives up after it queued the verdict
// of the first, which GitHub has not taken yet (here the update of that run
// hangs while the evaluation's later attempts are refused). The
// give-up fails only the run with no verdict on its way: one written
// beside the verdict could land after it and stand as the gate's result.
func TestAGiveUpLeavesARunWhoseVerdictIsBeingWritten(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		prodGo := make(chan struct{})
		policy, stagingHeld := prodPassesStagingHangs(t, prodGo)

		e := e2etest.Start(t, dbURL, app.Options{RetryBase: 100 * time.Millisecond, ShutdownTimeout: 200 * time.Millisecond,
			Gates: gatesflow.Options{SlowAfter: 50 * time.Millisecond}})
		e.CheckRequestsAtCleanup(t)
		e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", policyGateConfig(policy, "prod", "staging"))
		e.GitHub.PutFile(repo, "main", "deploy/staging.yaml", release(digestA, 3))
		base, _, number := openBump(e, repo)
		head := e.GitHub.PutFile(repo, "bump-checkout", "deploy/staging.yaml", release(digestB, 3))
		e.Install(repo)
		hold, release := holdUpdates(e)

		e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
		e.WaitFor("prod's run in progress", 20*time.Second, func() bool { _, ok := runOfEnvironment(e, "prod"); return ok })
		prodRun, _ := runOfEnvironment(e, "prod")
		hold(prodRun.ID)
		close(prodGo)
		select {
		case <-stagingHeld:
		case <-time.After(20 * time.Second):
			t.Fatal("the evaluation never asked the policy service about staging")
		}
		e.WaitFor("staging's run in progress, and prod's verdict held", 20*time.Second, func() bool {
			_, ok := runOfEnvironment(e, "staging")
			return ok && e.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'gates_report' AND state = 'running'`) == 1
		})

		refuseAccess(e, readPull)
		e.Restart()
		waitForJob(e, "the evaluation to give up", 30*time.Second, "gates_gave_up", "completed")
		release()
		e.Settle()

		prod, _ := runOfEnvironment(e, "prod")
		staging, _ := runOfEnvironment(e, "staging")
		if prod.Conclusion != "success" || staging.Conclusion != "failure" || staging.Title != gatesflow.GaveUpTitle {
			t.Errorf("prod %s %q, staging %s %q: want prod's verdict and staging's give-up", prod.Conclusion, prod.Title, staging.Conclusion, staging.Title)
		}
		for _, r := range e.GitHub.Requests() {
			if r.Method == http.MethodPatch && strings.HasSuffix(r.Path, fmt.Sprintf("/check-runs/%d", prod.ID)) && strings.Contains(string(r.Body), gatesflow.GaveUpTitle) {
				t.Errorf("the give-up wrote prod's run, whose verdict was on its way: %s", r.Body)
			}
		}
		allCompleted(t, e)
	})
}

// prodPassesStagingHangs is a policy validation service (its URL) that
// passes prod once prodGo is closed and never answers staging, each of
// whose requests it reports on stagingHeld.
func prodPassesStagingHangs(t *testing.T, prodGo <-chan struct{}) (url string, stagingHeld <-chan struct{}) {
	held, stop := make(chan struct{}, 1), make(chan struct{})
	policy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Environment string }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if req.Environment == "prod" {
			<-prodGo
			_, _ = w.Write([]byte(`{"result": "pass", "reason": "allowed"}`))
			return
		}
		select {
		case held <- struct{}{}:
		default:
		}
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(policy.Close)
	t.Cleanup(func() { close(stop) })
	return policy.URL, held
}

// holdUpdates makes GitHub hang the update of the run hold names until
// release is called (or the request is given up), however often it is
// tried: a verdict being written stays on its way, whatever the number of
// attempts of any job.
func holdUpdates(e *e2etest.Env) (hold func(id int64), release func()) {
	var held atomic.Int64
	released := make(chan struct{})
	const update = "PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}"
	pass := e.GitHub.Default(update)
	e.GitHub.Handle(update, func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		if id := held.Load(); id != 0 && p["check_run_id"] == strconv.FormatInt(id, 10) {
			select {
			case <-released:
			case <-r.Context().Done():
				return
			}
		}
		pass(w, r, p)
	})
	return held.Store, func() { close(released) }
}

// runOfEnvironment is the check run of the evaluation of env (of the app
// checkout), if there is one.
func runOfEnvironment(e *e2etest.Env, env string) (githubtest.CheckRun, bool) {
	for _, cr := range e.GitHub.CheckRuns(repo) {
		if strings.Contains(cr.ExternalID, " checkout/"+env+" ") {
			return cr, true
		}
	}
	return githubtest.CheckRun{}, false
}
