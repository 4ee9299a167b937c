package gatesflow_test

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/gatesflow"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// GitHub's rate limit, spent for longer than the client holds a request,
// is GitHub's "later", not a failure of the gates: neither the evaluation
// (reading the pull request) nor the verdicts (writing the check runs)
// spend their attempts on it at River's pace, to give up at the last one
// and fail the gates closed or leave their runs unwritten. Each job waits
// until the time GitHub names (Retry-After, else x-ratelimit-reset),
// counting no attempt, and once the limit lifts the gates get their runs
// as if it had never been.
func TestGatesWaitForGitHubsRateLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// route is the request GitHub refuses, kind the job that sends it.
		route, kind string
		// header is the refusal's headers at now.
		header func(now time.Time) []string
		// wait is how long after the refusal the job tries again.
		wait time.Duration
	}{
		{"verdicts on a secondary limit with Retry-After", "POST /repos/{owner}/{repo}/check-runs", "gates_report",
			func(time.Time) []string { return []string{"Retry-After", "1500"} }, 25 * time.Minute},
		{"verdicts on a primary limit spent until x-ratelimit-reset", "POST /repos/{owner}/{repo}/check-runs", "gates_report",
			func(now time.Time) []string {
				return []string{"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(now.Add(20*time.Minute).Unix(), 10)}
			}, 20*time.Minute + time.Second},
		{"evaluation on a secondary limit with Retry-After", "GET /repos/{owner}/{repo}/pulls/{pull_number}", "gates_evaluate",
			func(time.Time) []string { return []string{"Retry-After", "1500"} }, 25 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				t.Parallel()
				e := e2etest.Start(t, dbURL, app.Options{})
				e.CheckRequestsAtCleanup(t)
				e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", gatesConfig("process:\n  qa: {labels: [qa-approved]}", "prod"))
				base, head, number := openBump(e, repo)
				e.Install(repo)
				var lift atomic.Bool
				var refused atomic.Int32
				start := time.Now().Truncate(time.Second)
				e.GitHub.RefuseForRateLimit(tc.route, &lift, &refused, tc.header(start)...)

				e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
				// Every job of the gates ran and stopped: waiting, or (the old
				// way) retrying, given up or ended.
				e.WaitFor("the gates' jobs to meet the limit", 30*time.Second, func() bool {
					return refused.Load() > 0 && e.Int(`SELECT COUNT(*) FROM river_job WHERE kind = $1`, tc.kind) > 0 &&
						e.Int(`SELECT COUNT(*) FROM river_job WHERE kind LIKE 'gates_%' AND state IN ('available', 'running')`) == 0
				})
				end := time.Now()
				e.WaitsForLimit(tc.kind, len(e.Jobs(tc.kind)), start, end, tc.wait)
				if n := e.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'gates_gave_up'`); n != 0 {
					t.Errorf("%d give-ups queued while GitHub's rate limit holds, want none", n)
				}
				if n := len(e.GitHub.CheckRuns(repo)); n != 0 {
					t.Errorf("%d check runs written while GitHub's rate limit holds, want none", n)
				}
				if t.Failed() {
					return
				}

				// The limit lifts at the time named; the jobs run then (here
				// made due at once, on a server restarted so that the client
				// forgets the reset it saw) and the gate gets its verdict.
				lift.Store(true)
				e.Restart()
				e.Exec(`UPDATE river_job SET scheduled_at = created_at WHERE kind LIKE 'gates_%' AND state = 'scheduled'`)
				e.WaitFor("the gate's verdict", 30*time.Second, func() bool { return len(completedRuns(e, head)) == 1 })
				e.Settle()
				if cr := completedRuns(e, head)["ripcord/qa"]; cr.Conclusion != "failure" || cr.Title == gatesflow.GaveUpTitle {
					t.Errorf("ripcord/qa after the limit lifted: %s %q, want the gate's own verdict (no qa-approved label)", cr.Conclusion, cr.Title)
				}
				if n := len(e.GitHub.CheckRuns(repo)); n != 1 {
					t.Errorf("%d check runs, want the gate's one", n)
				}
			})
		})
	}
}
