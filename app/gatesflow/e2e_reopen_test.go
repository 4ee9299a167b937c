package gatesflow_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// Each reopening of a pull request evaluates its gates again, as each push
// does: the second reopening at the same head was one job with the first
// (same arguments), so nothing judged the pull request as it was then.
// A redelivery of one reopening stays one evaluation.
func TestEachReopeningEvaluatesTheGatesAgain(t *testing.T) {
	t.Parallel()
	e := e2etest.Start(t, testdb.MigratedURL(t, "sqlite"), app.Options{})
	e.CheckRequestsAtCleanup(t)
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", gatesConfig("process:\n  qa: {labels: [qa-approved]}", "prod"))
	base, head, number := openBump(e, repo)
	e.Install(repo)
	reopened := e2etest.Edit(t, pullRequest(t, number, head, base, "bump-checkout"), func(m map[string]any) {
		m["action"] = "reopened"
	})
	qaRuns := func() int {
		n := 0
		for _, cr := range e.GitHub.CheckRuns(repo) {
			if cr.HeadSHA == head && cr.Name == "ripcord/qa" && cr.Status == "completed" {
				n++
			}
		}
		return n
	}
	var first string
	for i := 1; i <= 2; i++ {
		id := e.Deliver("pull_request", reopened)
		if i == 1 {
			first = id
		}
		e.WaitFor(fmt.Sprintf("reopening %d's qa run", i), 20*time.Second, func() bool { return qaRuns() == i })
	}
	e.Redeliver("pull_request", first, reopened)
	e.Settle()
	if n := qaRuns(); n != 2 {
		t.Errorf("%d ripcord/qa runs after two reopenings and a redelivery of the first, want 2", n)
	}
}
