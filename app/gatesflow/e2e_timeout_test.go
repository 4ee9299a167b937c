package gatesflow_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/gatesflow"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A gate whose service never answers within the evaluation's time (here a
// policy service slower than the job's timeout, which its own configured
// timeout allows) cannot decide: it must fail closed and say why, not be
// left in progress for ever while the job times out attempt after attempt
// without writing a verdict.
func TestAGateThatOutlastsTheEvaluationFailsClosed(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	policy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	defer policy.Close()
	defer close(stop)

	e := e2etest.Start(t, testdb.MigratedURL(t, "sqlite"),
		app.Options{Gates: gatesflow.Options{SlowAfter: 50 * time.Millisecond, EvaluateTimeout: 2 * time.Second}})
	e.CheckRequestsAtCleanup(t)
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", gatesConfig(`process:
  policy_validation: {url: "`+policy.URL+`", timeout: 10m}`, "prod"))
	base, head, number := openBump(e, repo)
	e.Install(repo)
	e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))

	deadline := time.Now().Add(15 * time.Second)
	for len(completedRuns(e, head)) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	cr, ok := completedRuns(e, head)["ripcord/policy-validation"]
	if !ok {
		for _, r := range e.GitHub.CheckRuns(repo) {
			t.Logf("run %d %s %s %q", r.ID, r.Name, r.Status, r.Title)
		}
		t.Fatal("no verdict of ripcord/policy-validation 15 s after its evaluation ran out of time")
	}
	if cr.Conclusion != "failure" || !strings.Contains(cr.Title, "could not decide") || !strings.Contains(cr.Title, "did not answer") {
		t.Errorf("ripcord/policy-validation: %s %q, want a failure that says the policy service did not answer", cr.Conclusion, cr.Title)
	}
	if n := len(e.GitHub.CheckRuns(repo)); n != 1 {
		t.Errorf("%d check runs, want the one the in-progress run became", n)
	}
}
