package gatesflow_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/gatesflow"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// refuseUpdates makes GitHub answer 422 to every check-run update refused
// says to refuse (given its decoded body), and take the others.
func refuseUpdates(e *e2etest.Env, refused func(body map[string]any) bool) {
	refuseWrites(e, "PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}", refused)
}

// refuseCreates is refuseUpdates for the requests that create a check run.
func refuseCreates(e *e2etest.Env, refused func(body map[string]any) bool) {
	refuseWrites(e, "POST /repos/{owner}/{repo}/check-runs", refused)
}

func refuseWrites(e *e2etest.Env, pattern string, refused func(body map[string]any) bool) {
	pass := e.GitHub.Default(pattern)
	e.GitHub.Handle(pattern, func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		if refused(body) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = w.Write([]byte(`{"message":"Validation Failed","errors":[{"resource":"CheckRun","code":"invalid","field":"output"}],"documentation_url":"https://docs.github.com/rest"}`))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(raw))
		pass(w, r, p)
	})
}

// A verdict GitHub refuses on every attempt of its job (here a 422 on the
// update that completes the run the evaluation showed in progress) must
// not leave the gate spinning for ever, a required check with it: the
// job's last attempt completes the run as a failure that says the verdict
// could not be written, why, and how to evaluate again.
func TestAVerdictGitHubRefusesForGoodCompletesItsRunAsAFailure(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		e, shown := passAfterShowingRun(t, dbURL, app.Options{RetryBase: 10 * time.Millisecond}, func(e *e2etest.Env) {
			// GitHub refuses the verdict (a success), whatever the attempt.
			refuseUpdates(e, func(body map[string]any) bool { return body["conclusion"] == "success" })
		})
		waitForJob(e, "the verdict's job to fail for good", 60*time.Second, "gates_report", "cancelled")
		e.Settle()

		cr := run(e, shown.ID)
		if cr.Status != "completed" || cr.Conclusion != "failure" || cr.Title != gatesflow.NotWrittenTitle ||
			!strings.Contains(cr.Summary, "after 8 attempts") || !strings.Contains(cr.Summary, "GitHub answered 422 Validation Failed") ||
			!strings.Contains(cr.Summary, "Re-run") {
			t.Fatalf("the run whose verdict GitHub refused: %s %s %q\n%s\nwant a failure that says the verdict could not be written, why, and how to evaluate again",
				cr.Status, cr.Conclusion, cr.Title, cr.Summary)
		}
		onlyTheRunShown(t, e)
	})
}

// A verdict whose job was to create its gate's run (the gate was quick, so
// the evaluation showed no run in progress) and that GitHub refuses on
// every attempt left the gate with no run at all: a required check of it
// waited "Expected" for ever. The job's last attempt creates the run of
// the evaluation, completed as a failure that says the verdict could not
// be written, why, and how to evaluate again.
func TestAVerdictWhoseRunGitHubRefusesToCreateGetsARunAsAFailure(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		e := e2etest.Start(t, dbURL, app.Options{RetryBase: 10 * time.Millisecond})
		e.CheckRequestsAtCleanup(t)
		e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", gatesConfig("values: {schema: deploy/release.schema.json}", "prod"))
		e.GitHub.PutFile(repo, "main", "deploy/release.schema.json", schema)
		base, head, number := openBump(e, repo)
		e.Install(repo)
		// GitHub refuses the run the verdict (a success) creates, whatever the attempt.
		refuseCreates(e, func(body map[string]any) bool { return body["conclusion"] == "success" })

		e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
		waitForJob(e, "the verdict's job to fail for good", 60*time.Second, "gates_report", "cancelled")
		e.Settle()
		runs := e.GitHub.CheckRuns(repo)
		if len(runs) != 1 {
			t.Fatalf("runs: %+v, want one run of the gate, failed as its verdict could not be written", runs)
		}
		cr := runs[0]
		if cr.Name != "ripcord/values" || cr.HeadSHA != head || cr.Status != "completed" || cr.Conclusion != "failure" ||
			cr.Title != gatesflow.NotWrittenTitle || !strings.Contains(cr.Summary, "(success: ") ||
			!strings.Contains(cr.Summary, "after 8 attempts") || !strings.Contains(cr.Summary, "GitHub answered 422 Validation Failed") ||
			!strings.Contains(cr.Summary, "Re-run") ||
			!strings.Contains(cr.ExternalID, fmt.Sprintf("%s#%d@%s checkout/prod pull_request opened seq=", repo, number, head)) {
			t.Errorf("the gate's run: %s on %s, %s %s %q (%s)\n%s\nwant the evaluation's run of ripcord/values on the head, failed as its verdict (a success) could not be written, why, and how to evaluate again",
				cr.Name, cr.HeadSHA, cr.Status, cr.Conclusion, cr.Title, cr.ExternalID, cr.Summary)
		}
	})
}

// A verdict GitHub took is the gate's result, even when its job then fails
// for good (here every update that adds the annotations past the first 50
// is refused): the run is not replaced by a failure that says the verdict
// could not be written.
func TestAVerdictGitHubTookIsNotReplacedWhenItsJobFailsForGood(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		e := e2etest.Start(t, dbURL, app.Options{RetryBase: 10 * time.Millisecond})
		e.CheckRequestsAtCleanup(t)
		e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", gatesConfig("values: {schema: deploy/release.schema.json}", "prod"))
		e.GitHub.PutFile(repo, "main", "deploy/release.schema.json",
			`{"type":"object","properties":{"ports":{"type":"array","items":{"type":"integer","maximum":10}}}}`)
		var b strings.Builder
		b.WriteString(release(digestB, 3) + "ports:\n")
		for range 60 {
			b.WriteString("  - 99\n")
		}
		base := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", release(digestA, 3))
		head := e.GitHub.PutFile(repo, "bump-checkout", "deploy/prod.yaml", b.String())
		number := e.GitHub.OpenPullRequest(repo, "octocat", "bump-checkout", "main", "bump checkout")
		e.Install(repo)
		refuseUpdates(e, func(body map[string]any) bool {
			out, _ := body["output"].(map[string]any)
			as, _ := out["annotations"].([]any)
			return len(as) > 0
		})

		e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
		waitForJob(e, "the verdict's job to fail for good", 60*time.Second, "gates_report", "cancelled")
		e.Settle()
		runs := e.GitHub.CheckRuns(repo)
		if len(runs) != 1 || runs[0].Status != "completed" || runs[0].Title == gatesflow.NotWrittenTitle || len(runs[0].Annotations) != 50 {
			t.Fatalf("runs: %+v, want the verdict GitHub took, with its first 50 annotations", runs)
		}
		for _, r := range e.GitHub.Requests() {
			if r.Method == http.MethodPatch && strings.Contains(string(r.Body), gatesflow.NotWrittenTitle) {
				t.Errorf("the verdict GitHub took was written over: %s", r.Body)
			}
		}
	})
}

// A server that stops while a verdict's job is at its last attempt
// interrupts the job: River runs it again, the attempt not counted, so the
// verdict has not failed for good and its run is not failed for it; the
// verdict is written when the job runs again.
func TestAVerdictTheServersStopInterruptsAtItsLastAttemptIsWrittenAfter(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		// The verdict's update is refused, then, once holding, hangs until
		// its request is given up; then it is taken.
		var mode atomic.Int32 // 0 refuse, 1 hold, 2 take
		holding := make(chan struct{}, 1)
		opts := app.Options{RetryBase: time.Hour, ShutdownTimeout: 200 * time.Millisecond}
		e, shown := passAfterShowingRun(t, dbURL, opts, func(e *e2etest.Env) {
			const update = "PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}"
			pass := e.GitHub.Default(update)
			e.GitHub.Handle(update, func(w http.ResponseWriter, r *http.Request, p map[string]string) {
				switch mode.Load() {
				case 0:
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusUnprocessableEntity)
					_, _ = w.Write([]byte(`{"message":"Validation Failed","documentation_url":"https://docs.github.com/rest"}`))
					return
				case 1:
					raw, _ := io.ReadAll(r.Body)
					if !strings.Contains(string(raw), gatesflow.NotWrittenTitle) {
						select {
						case holding <- struct{}{}:
						default:
						}
						<-r.Context().Done()
						return
					}
					r.Body = io.NopCloser(bytes.NewReader(raw))
				}
				pass(w, r, p)
			})
		})
		waitForJob(e, "the verdict's refused attempt", 30*time.Second, "gates_report", "retryable")
		// Its last attempt hangs on the update while the server stops.
		mode.Store(1)
		retryNow(t, dbURL, "gates_report", "attempt = 7")
		select {
		case <-holding:
		case <-time.After(30 * time.Second):
			t.Fatal("the last attempt never updated the run")
		}
		mode.Store(2)
		e.Restart()
		waitForJob(e, "the verdict's job to end", 30*time.Second, "gates_report", "completed", "cancelled")
		e.Settle()
		if cr := run(e, shown.ID); cr.Status != "completed" || cr.Conclusion != "success" {
			t.Errorf("the gate's run: %s %s %q, want the verdict written after the restart", cr.Status, cr.Conclusion, cr.Title)
		}
		for _, r := range e.GitHub.Requests() {
			if r.Method == http.MethodPatch && strings.Contains(string(r.Body), gatesflow.NotWrittenTitle) {
				t.Errorf("the interrupted verdict's run was failed: %s", r.Body)
			}
		}
	})
}

// heldPolicy is a policy validation service that passes every request once
// answer is closed, holding each until then (so the gate's run is shown in
// progress first).
func heldPolicy(t *testing.T, answer <-chan struct{}) *httptest.Server {
	policy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-answer:
		case <-r.Context().Done():
			return
		}
		_, _ = w.Write([]byte(`{"result": "pass", "reason": "allowed"}`))
	}))
	t.Cleanup(policy.Close)
	return policy
}
