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

// An evaluation whose job fails for good must not leave its gate spinning:
// here the server stops while the policy service has not answered (the
// gate shows in progress), and every later attempt is refused by GitHub
// (the App lost access to pull requests). The run it showed in progress
// is completed as a failure that says ripcord could not evaluate the gate,
// why, and how to evaluate it again; a gate that was not evaluated does
// not pass. A Re-run of that run, and one of the check suite, evaluate the
// gate again, in newer evaluations whose verdicts replace it.
func TestAnEvaluationWhoseJobFailsForGoodCompletesItsRunsInProgress(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
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

// A newer evaluation that reports the gate before the lost one gives up
// keeps its verdict: the lost evaluation's run, which the newer verdict
// completed superseded, is not turned into a failure, and no run is added.
func TestAGiveUpLeavesANewerEvaluationsVerdictAlone(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
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

// An evaluation queued before jobs had a spare attempt (with 5 attempts,
// or 8) gives up at its own last attempt: River would discard it after
// that one, and the run it showed in progress would spin for ever.
func TestAnEvaluationQueuedWithFewerAttemptsGivesUpAtItsLast(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
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
	testdb.Each(t, func(t *testing.T, dbURL string) {
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

// lost is a pull request whose gate evaluation showed its policy gate in
// progress when the server stopped, and that GitHub refuses to read after.
type lost struct {
	e          *e2etest.Env
	base, head string
	number     int
	shown      githubtest.CheckRun // the run in progress
	held       chan struct{}       // receives when the policy service holds a request
	// refuse makes GitHub refuse the pull request, readable answers it
	// again; answer makes the policy service answer (pass) from now on;
	// recover is readable and answer.
	refuse, readable, answer, recover func()
}

func loseEvaluation(t *testing.T, dbURL string, retryBase time.Duration) lost {
	t.Helper()
	t.Cleanup(gatesflow.SetSlowAfter(50 * time.Millisecond))
	var answering atomic.Bool
	held, stop := make(chan struct{}, 1), make(chan struct{})
	policy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !answering.Load() {
			select {
			case held <- struct{}{}:
			default:
			}
			select {
			case <-stop:
			case <-r.Context().Done():
			}
			return
		}
		_, _ = w.Write([]byte(`{"result": "pass", "reason": "allowed"}`))
	}))
	t.Cleanup(policy.Close)
	t.Cleanup(func() { close(stop) })

	e := e2etest.Start(t, dbURL, app.Options{RetryBase: retryBase, ShutdownTimeout: 200 * time.Millisecond})
	e.CheckRequestsAtCleanup(t)
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", policyGateConfig(policy.URL, "prod"))
	l := lost{e: e}
	l.base, l.head, l.number = openBump(e, repo)
	e.Install(repo)
	e.Deliver("pull_request", pullRequest(t, l.number, l.head, l.base, "bump-checkout"))
	select {
	case <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("the evaluation never asked the policy service")
	}
	e.WaitFor("the gate's run in progress", 20*time.Second, func() bool {
		runs := e.GitHub.CheckRuns(repo)
		return len(runs) == 1 && runs[0].Status == "in_progress"
	})
	l.shown = e.GitHub.CheckRuns(repo)[0]

	readPull := "GET /repos/{owner}/{repo}/pulls/{pull_number}"
	l.refuse = func() {
		e.GitHub.Handle(readPull, func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"message":"Resource not accessible by integration","documentation_url":"https://docs.github.com/rest"}`))
		})
	}
	l.readable = func() { e.GitHub.Handle(readPull, e.GitHub.Default(readPull)) }
	l.answer = func() { answering.Store(true) }
	l.recover = func() { l.readable(); l.answer() }
	l.held = held
	l.refuse()
	e.Restart()
	return l
}

// passAfterShowingRun starts the server with opts on a pull request whose
// one gate, a policy validation held until its run shows in progress,
// passes once it does; it returns that run. github sets GitHub's test
// server up before the pull request is delivered.
func passAfterShowingRun(t *testing.T, dbURL string, opts app.Options, github func(e *e2etest.Env)) (*e2etest.Env, githubtest.CheckRun) {
	t.Helper()
	t.Cleanup(gatesflow.SetSlowAfter(50 * time.Millisecond))
	answer := make(chan struct{})
	policy := heldPolicy(t, answer)

	e := e2etest.Start(t, dbURL, opts)
	e.CheckRequestsAtCleanup(t)
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", policyGateConfig(policy.URL, "prod"))
	base, head, number := openBump(e, repo)
	e.Install(repo)
	github(e)

	e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
	e.WaitFor("the gate's run in progress", 20*time.Second, func() bool {
		runs := e.GitHub.CheckRuns(repo)
		return len(runs) == 1 && runs[0].Status == "in_progress"
	})
	shown := e.GitHub.CheckRuns(repo)[0]
	close(answer)
	return e, shown
}

// loseEvaluationToItsRetry is loseEvaluation whose retry waits (an hour)
// for the test to run it, or lose it: it returns once the attempt GitHub
// refused after the restart has ended.
func loseEvaluationToItsRetry(t *testing.T, dbURL string) lost {
	t.Helper()
	l := loseEvaluation(t, dbURL, time.Hour)
	waitForJob(l.e, "the evaluation's refused attempt", 30*time.Second, "gates_evaluate", "retryable")
	return l
}

// onlyTheRunShown checks that the run the evaluation showed in progress is
// the only check run: the failure that completes it was not made beside it.
func onlyTheRunShown(t *testing.T, e *e2etest.Env) {
	t.Helper()
	if n := len(e.GitHub.CheckRuns(repo)); n != 1 {
		t.Errorf("%d check runs, want only the one the evaluation showed in progress", n)
	}
}

func allCompleted(t *testing.T, e *e2etest.Env) {
	t.Helper()
	for _, r := range e.GitHub.CheckRuns(repo) {
		if r.Status != "completed" {
			t.Errorf("%s of %s left %s", r.Name, r.ExternalID, r.Status)
		}
	}
}

// An evaluation of two environments gives up after it queued the verdict
// of the first, which GitHub has not taken yet (here the update of that run
// hangs while the evaluation's later attempts are refused). The
// give-up fails only the run with no verdict on its way: one written
// beside the verdict could land after it and stand as the gate's result.
func TestAGiveUpLeavesARunWhoseVerdictIsBeingWritten(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		defer gatesflow.SetSlowAfter(50 * time.Millisecond)()
		prodGo, stagingHeld, stop := make(chan struct{}), make(chan struct{}, 1), make(chan struct{})
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
			case stagingHeld <- struct{}{}:
			default:
			}
			select {
			case <-stop:
			case <-r.Context().Done():
			}
		}))
		defer policy.Close()
		defer close(stop)

		e := e2etest.Start(t, dbURL, app.Options{RetryBase: 100 * time.Millisecond, ShutdownTimeout: 200 * time.Millisecond})
		e.CheckRequestsAtCleanup(t)
		e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", policyGateConfig(policy.URL, "prod", "staging"))
		e.GitHub.PutFile(repo, "main", "deploy/staging.yaml", release(digestA, 3))
		base, _, number := openBump(e, repo)
		head := e.GitHub.PutFile(repo, "bump-checkout", "deploy/staging.yaml", release(digestB, 3))
		e.Install(repo)
		runOf := func(env string) (githubtest.CheckRun, bool) {
			for _, cr := range e.GitHub.CheckRuns(repo) {
				if strings.Contains(cr.ExternalID, " checkout/"+env+" ") {
					return cr, true
				}
			}
			return githubtest.CheckRun{}, false
		}
		// The update of the held run hangs until released (or its request is
		// given up), however often the verdict's job tries it: the verdict
		// stays on its way, whatever the number of attempts of either job.
		var held atomic.Int64
		release := make(chan struct{})
		update := "PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}"
		e.GitHub.Handle(update, func(w http.ResponseWriter, r *http.Request, p map[string]string) {
			if id := held.Load(); id != 0 && p["check_run_id"] == strconv.FormatInt(id, 10) {
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
			}
			e.GitHub.Default(update)(w, r, p)
		})

		e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
		e.WaitFor("prod's run in progress", 20*time.Second, func() bool { _, ok := runOf("prod"); return ok })
		prodRun, _ := runOf("prod")
		held.Store(prodRun.ID)
		close(prodGo)
		select {
		case <-stagingHeld:
		case <-time.After(20 * time.Second):
			t.Fatal("the evaluation never asked the policy service about staging")
		}
		e.WaitFor("staging's run in progress, and prod's verdict held", 20*time.Second, func() bool {
			_, ok := runOf("staging")
			return ok && e.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'gates_report' AND state = 'running'`) == 1
		})

		readPull := "GET /repos/{owner}/{repo}/pulls/{pull_number}"
		e.GitHub.Handle(readPull, func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"message":"Resource not accessible by integration","documentation_url":"https://docs.github.com/rest"}`))
		})
		e.Restart()
		waitForJob(e, "the evaluation to give up", 30*time.Second, "gates_gave_up", "completed")
		close(release)
		e.Settle()

		prod, _ := runOf("prod")
		staging, _ := runOf("staging")
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

// policyGateConfig is gatesConfig with one gate, a policy validation
// service at url.
func policyGateConfig(url string, envs ...string) string {
	return gatesConfig("process:\n  policy_validation: {url: \""+url+"\"}", envs...)
}

// gatesConfig is a .github/ripcord.yml whose app checkout has gates (the
// YAML under its gates: key, unindented) and each of envs an environment
// (on the cluster <env>-eu) that rolls back by pull request.
func gatesConfig(gates string, envs ...string) string {
	var b strings.Builder
	b.WriteString("version: 1\napps:\n  checkout:\n    gates:\n")
	for _, l := range strings.Split(gates, "\n") {
		b.WriteString("      " + l + "\n")
	}
	b.WriteString("    environments:\n")
	for _, env := range envs {
		fmt.Fprintf(&b, "      %s:\n        cluster: %s-eu\n        rollback: {mode: pull-request, file: deploy/%s.yaml, fields: {image: image.repository, digest: image.digest}}\n",
			env, env, env)
	}
	return b.String()
}

// A give-up whose evaluation knew its gates (it had read the config and
// the release) but never showed them in progress left them with no run
// at all: a required check of such a gate stayed "Expected — waiting" for
// ever. Here every attempt reads the release, then runs out of its time
// reading the values schema, before any verdict is queued. Each gate gets
// a run of the evaluation completed as the give-up's failure.
func TestAGiveUpMakesTheRunsOfTheGatesItKnewAndNeverShowed(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		defer gatesflow.SetEvaluateTimeout(time.Second)()
		e := e2etest.Start(t, dbURL, app.Options{RetryBase: 10 * time.Millisecond})
		e.CheckRequestsAtCleanup(t)
		e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", gatesConfig("values: {schema: deploy/release.schema.json}\nprocess:\n  qa: {labels: [qa-approved]}", "prod"))
		e.GitHub.PutFile(repo, "main", "deploy/release.schema.json", schema)
		base, head, number := openBump(e, repo)
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
