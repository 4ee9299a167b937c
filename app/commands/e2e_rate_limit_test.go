package commands_test

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// GitHub's rate limit, spent for longer than the client holds a request,
// does not spend the attempts of the reaction and the reply (a "tries
// again at" notice among the replies): each job waits until the time
// GitHub names (Retry-After, else x-ratelimit-reset), not River's backoff,
// and the wait is not counted as an attempt. Once the limit lifts, both
// are posted.
func TestRepliesAndReactionsWaitForGitHubsRateLimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		// header is the refusal's headers at now.
		header func(now time.Time) []string
		// wait is how long after the refusal the jobs try again.
		wait time.Duration
	}{
		{"primary limit spent until x-ratelimit-reset", func(now time.Time) []string {
			return []string{"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(now.Add(20*time.Minute).Unix(), 10)}
		}, 20*time.Minute + time.Second},
		{"secondary limit with Retry-After", func(time.Time) []string { return []string{"Retry-After", "1500"} },
			25 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testdb.Each(t, func(t *testing.T, dbURL string) {
				e := e2etest.Start(t, dbURL, app.Options{})
				e.Install(repo)
				e.CheckRequestsAtCleanup(t)
				issue := openIssue(t, e, "checkout is slow")
				var lift atomic.Bool
				var refused atomic.Int32
				start := time.Now().Truncate(time.Second)
				for _, route := range []string{"POST /repos/{owner}/{repo}/issues/{issue_number}/comments",
					"POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"} {
					e.GitHub.RefuseForRateLimit(route, &lift, &refused, tc.header(start)...)
				}
				id := comment(t, e, issue, "octocat", "/ripcord help")

				kinds := []string{"comment_reaction", "comment_reply"}
				e.WaitFor("the reaction and the reply refused and waiting", 15*time.Second, func() bool {
					for _, k := range kinds {
						js := e.Jobs(k)
						if len(js) != 1 {
							return false
						}
						switch js[0].State {
						case rivertype.JobStateScheduled, rivertype.JobStateRetryable, rivertype.JobStateDiscarded:
						default:
							return false
						}
					}
					return refused.Load() > 0
				})
				end := time.Now()
				for _, k := range kinds {
					e.WaitsForLimit(k, 1, start, end, tc.wait)
				}
				if reply(e, id) != "" || acknowledged(e, id) {
					t.Fatal("answered while GitHub's rate limit is spent")
				}

				// The limit lifts at the time named; the jobs run then (here
				// made due at once, on a server restarted so that the client
				// forgets the reset it saw) and post both.
				lift.Store(true)
				e.Restart()
				e.Exec(`UPDATE river_job SET scheduled_at = created_at WHERE kind IN ('comment_reaction', 'comment_reply') AND state = 'scheduled'`)
				e.WaitFor("the reply and the reaction", 15*time.Second, func() bool {
					return reply(e, id) != "" && acknowledged(e, id)
				})
			})
		})
	}
}
