package configload_test

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// GitHub's rate limit on the ripcord/config check run (x-ratelimit-remaining
// 0 until a reset further away than the client holds a request) does not
// spend the check's attempts, its last one dropping the check run that
// says why the config does not load: the job waits for the reset, counting
// no attempt, and writes the check run after it.
func TestConfigCheckWaitsForGitHubsRateLimit(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := e2etest.Start(t, dbURL, app.Options{})
		e.CheckRequestsAtCleanup(t)
		e.Install(repo)
		bad := e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", "version: 1\napps:\n  checkout:\n    enviroments: {}\n")
		var lift atomic.Bool
		var refused atomic.Int32
		start := time.Now().Truncate(time.Second)
		e.GitHub.RefuseForRateLimit("POST /repos/{owner}/{repo}/check-runs", &lift, &refused,
			"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(start.Add(20*time.Minute).Unix(), 10))
		e.Deliver("push", e.Push(repo, bad, ".github/ripcord.yml"))
		e.WaitFor("the check to meet the limit", 20*time.Second, func() bool {
			return refused.Load() > 0 &&
				e.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'config_check' AND state NOT IN ('available', 'running')`) == 1
		})
		end := time.Now()
		e.WaitsForLimit("config_check", 1, start, end, 20*time.Minute)

		// The limit lifts at its reset; the job runs then (here made due
		// at once, on a server restarted so that the client forgets the
		// reset it saw).
		lift.Store(true)
		e.Restart()
		e.Exec(`UPDATE river_job SET scheduled_at = created_at WHERE kind = 'config_check' AND state = 'scheduled'`)
		e.WaitFor("the failing check", 20*time.Second, func() bool { return len(configChecks(e)) == 1 })
		e.Settle()
		if c := configChecks(e); len(c) != 1 || c[0].HeadSHA != bad || c[0].Conclusion != "failure" {
			t.Errorf("config checks = %+v, want one failing on %s", c, bad)
		}
	})
}
