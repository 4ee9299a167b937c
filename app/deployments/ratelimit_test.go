package deployments

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// GitHub's rate limit on a deployment write, named for longer than the
// client holds a request (a 403 with Retry-After), is no refusal: the job
// is neither ended with the limit as the reason the release shows no
// deployment, nor retried at River's pace until its last attempt gives up.
// It waits until the time GitHub names, counting no attempt, and writes
// the deployment once the limit has lifted.
func TestRateLimitedSyncWaitsForTheLimitAndWritesAfter(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		e.install(repository)
		var lift atomic.Bool
		var refused atomic.Int32
		e.gh.RefuseForRateLimit("POST /repos/{owner}/{repo}/deployments", &lift, &refused, "Retry-After", "1500")
		r := newRelease("rel-l:prod-eu/production")
		start := time.Now()
		e.open(r)
		e.waitFor("the sync to meet the limit and stop running", func() bool {
			return refused.Load() > 0 && e.count(`SELECT COUNT(*) FROM river_job WHERE kind = 'deployment_sync'
				AND state NOT IN ('available', 'running')`) == 1
		})
		end := time.Now()
		res, err := e.rc.JobList(context.Background(), river.NewJobListParams().Kinds("deployment_sync").
			States(rivertype.JobStateScheduled, rivertype.JobStateRetryable, rivertype.JobStateCompleted,
				rivertype.JobStateDiscarded, rivertype.JobStateCancelled))
		if err != nil || len(res.Jobs) != 1 {
			t.Fatalf("deployment syncs: %v, %v; want one", res, err)
		}
		j := res.Jobs[0]
		if j.State != rivertype.JobStateScheduled || j.Attempt != 0 {
			t.Fatalf("the rate-limited sync is %s at attempt %d, want scheduled at attempt 0: waiting is not a failed attempt",
				j.State, j.Attempt)
		}
		if lo, hi := start.Add(25*time.Minute-2*time.Second), end.Add(25*time.Minute+2*time.Second); j.ScheduledAt.Before(lo) || j.ScheduledAt.After(hi) {
			t.Errorf("the sync tries again at %s, want the 25 minutes GitHub named from the refusal",
				j.ScheduledAt.UTC().Format(time.RFC3339))
		}
		if got := e.getInfo(r.ReleaseID); got.Skipped != "" || got.DeploymentID != 0 {
			t.Errorf("GET deployment = %+v while GitHub's limit holds, want nothing written and no reason: it was not refused", got)
		}

		// The limit lifts at the time named: here made due at once.
		lift.Store(true)
		if _, err := e.db.Write.Exec(`UPDATE river_job SET scheduled_at = created_at WHERE kind = 'deployment_sync'`); err != nil {
			t.Fatal(err)
		}
		e.settle()
		if got := e.statuses(r.ReleaseID); got != "in_progress" {
			t.Errorf("statuses after the limit lifted = %q, want %q", got, "in_progress")
		}
		if got := e.getInfo(r.ReleaseID); got.Skipped != "" || got.State != "in_progress" {
			t.Errorf("GET deployment = %+v after the limit lifted, want in_progress and no reason", got)
		}
		e.observe(r, records.PhaseHealthy, 4)
		e.settle()
		if got := e.statuses(r.ReleaseID); got != "in_progress success" {
			t.Errorf("statuses = %q, want %q", got, "in_progress success")
		}
	})
}
