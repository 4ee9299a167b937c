package gatesflow_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/gatesflow"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
)

// The set-ups the tests of gate jobs that fail for good, or are lost with
// their process, share: an evaluation lost while it showed a run in
// progress, and a verdict of a gate shown in progress first.

// readPull is the request that reads a pull request.
const readPull = "GET /repos/{owner}/{repo}/pulls/{pull_number}"

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

// loseEvaluation starts the server (retrying jobs after retryBase) on a
// pull request whose one gate, a policy validation, is held until its run
// shows in progress; then GitHub refuses the pull request, and the server
// restarts, losing the evaluation's attempt.
func loseEvaluation(t *testing.T, dbURL string, retryBase time.Duration) lost {
	t.Helper()
	return loseEvaluationWith(t, dbURL, retryBase, "")
}

// loseEvaluationWith is loseEvaluation with more gates beside the policy
// validation (the YAML under the process: key, unindented), quick ones:
// the evaluation never shows them in progress.
func loseEvaluationWith(t *testing.T, dbURL string, retryBase time.Duration, process string) lost {
	t.Helper()
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

	e := e2etest.Start(t, dbURL, app.Options{RetryBase: retryBase, ShutdownTimeout: 200 * time.Millisecond,
		Gates: gatesflow.Options{SlowAfter: 50 * time.Millisecond}})
	e.CheckRequestsAtCleanup(t)
	config := policyGateConfig(policy.URL, "prod")
	if process != "" {
		config = gatesConfig("process:\n  policy_validation: {url: \""+policy.URL+"\"}\n  "+strings.ReplaceAll(process, "\n", "\n  "), "prod")
	}
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", config)
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

	l.refuse = func() { refuseAccess(e, readPull) }
	l.readable = func() { e.GitHub.Handle(readPull, e.GitHub.Default(readPull)) }
	l.answer = func() { answering.Store(true) }
	l.recover = func() { l.readable(); l.answer() }
	l.held = held
	l.refuse()
	e.Restart()
	return l
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

// passAfterShowingRun starts the server with opts on a pull request whose
// one gate, a policy validation held until its run shows in progress,
// passes once it does; it returns that run. github sets GitHub's test
// server up before the pull request is delivered.
func passAfterShowingRun(t *testing.T, dbURL string, opts app.Options, github func(e *e2etest.Env)) (*e2etest.Env, githubtest.CheckRun) {
	t.Helper()
	answer := make(chan struct{})
	policy := heldPolicy(t, answer)

	opts.Gates.SlowAfter = 50 * time.Millisecond
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

// refuseAccess makes GitHub answer pattern (a method and path template, as
// githubtest.Server.Handle takes it) 403, as it does an App that lost the
// permission.
func refuseAccess(e *e2etest.Env, pattern string) {
	e.GitHub.Handle(pattern, func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"message":"Resource not accessible by integration","documentation_url":"https://docs.github.com/rest"}`))
	})
}
