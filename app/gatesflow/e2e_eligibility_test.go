package gatesflow_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/gates"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A pull request that pins the digest of r1, healthy and the fifth newest
// release of checkout in prod/prod-eu that ran, is an eligible rollback:
// its content gate is advisory, however many releases whose pull request
// is not merged (opened) are newer. More of them than
// eligibility.ReadAhead used to fill the records the gates read, so r1 was
// not read: the content gate blocked as on an ordinary promotion, and the
// git revision r1 ran was unknown.
func TestGatesJudgeEligibilityAmongTheReleasesThatRan(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		e, cs := startSast(t, dbURL, "")
		digest := func(n int) string { return fmt.Sprintf("sha256:%064x", n) }
		commit := func(n int) string { return fmt.Sprintf("%040x", 0xc0de00+n) }
		// r1 healthy, r2..r5 failed: r1 is the fifth newest release that ran.
		for n := 1; n <= 5; n++ {
			status := "failed"
			if n == 1 {
				status = "success"
			}
			f := map[string]any{"source": "task", "repository": repo, "workflow_run_id": 8000 + n, "run_attempt": 1,
				"status": status, "app": "checkout", "environment": "prod", "cluster": "prod-eu",
				"release_id": fmt.Sprintf("r%d", n), "images": []string{"reg.example.com/checkout@" + digest(n)},
				"metadata": map[string]string{"commit": commit(n)}, "observed_at": time.Now().UTC().Format(time.RFC3339Nano)}
			if status == "failed" {
				f["failure_type"] = "deployment_failure"
			}
			e.Fact(f)
			time.Sleep(2 * time.Millisecond) // distinct created_at: eligibility orders by it
		}
		for i := range eligibility.ReadAhead + 1 { // releases whose pull requests are not merged
			n := 100 + i
			body := fmt.Sprintf(`{"release_id":"pending-%d","app":"checkout","environment":"prod","cluster":"prod-eu","repository":%q,"image":"reg.example.com/checkout@%s","git_revision":%q}`,
				i, repo, digest(n), commit(n))
			if status, out := e.Do("POST", "/api/v1/releases", "application/json", []byte(body)); status != 201 {
				t.Fatalf("open pending-%d: %d %s", i, status, out)
			}
			time.Sleep(2 * time.Millisecond)
		}
		// r1's commit was analysed, with no alert.
		cs.Analyzed(repo, "refs/heads/main")
		cs.AnalyzedCommit(repo, "refs/heads/main", commit(1))
		base := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", release(digest(5), 3))
		head := e.GitHub.PutFile(repo, "rollback-r1", "deploy/prod.yaml", release(digest(1), 3))
		number := e.GitHub.OpenPullRequest(repo, "octocat", "rollback-r1", "main", "roll checkout back to r1")
		e.Deliver("pull_request", pullRequest(t, number, head, base, "rollback-r1"))
		e.WaitFor("the sast gate", 20*time.Second, func() bool { return len(completedRuns(e, head)) == 1 })
		cr := completedRuns(e, head)["ripcord/sast"]
		if !strings.Contains(cr.Summary, gates.AdvisoryWords) || !strings.Contains(cr.Summary, "Record `r1`") {
			t.Errorf("r1's digest with %d opened releases newer is not judged an eligible rollback:\n%s",
				eligibility.ReadAhead+1, cr.Summary)
		}
		if !strings.Contains(cr.Summary, commit(1)) {
			t.Errorf("the summary does not name r1's git revision %s:\n%s", commit(1), cr.Summary)
		}
		if cr.Conclusion != "success" {
			t.Errorf("sast on an eligible rollback with no alert: %s, want success", cr.Conclusion)
		}
	})
}

// startSast starts ripcord with checkout's sast gate and its prod
// environment (cluster prod-eu, rolled back through deploy/prod.yaml), plus
// the environments more names (indented as prod's), installed on repo,
// with GitHub's code-scanning alerts served.
func startSast(t *testing.T, dbURL, more string) (*e2etest.Env, *githubtest.CodeScanning) {
	t.Helper()
	e := e2etest.Start(t, dbURL, app.Options{})
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", gatesConfig(`sast: {severity: high}`, "prod")+more)
	e.Install(repo)
	return e, githubtest.ServeCodeScanning(e.GitHub)
}
