package recoveryflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// rerunJobs lists the re-run jobs of run id, by state.
func rerunJobs(t *testing.T, f *flow, id int64) map[rivertype.JobState]int {
	t.Helper()
	ctx := context.Background()
	out := map[rivertype.JobState]int{}
	err := f.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		res, err := f.deps.River().JobListTx(ctx, tx, river.NewJobListParams().Kinds(RerunArgs{}.Kind()).First(10000).
			States(rivertype.JobStateAvailable, rivertype.JobStateScheduled, rivertype.JobStateRetryable, rivertype.JobStateRunning,
				rivertype.JobStateCompleted, rivertype.JobStateDiscarded, rivertype.JobStateCancelled))
		if err != nil {
			return err
		}
		for _, j := range res.Jobs {
			var a RerunArgs
			if err := json.Unmarshal(j.EncodedArgs, &a); err != nil {
				return err
			}
			if a.RunID == id {
				out[j.State]++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// queueRerun queues the re-run job of a scheduled episode and leaves it in
// state (discarded: its last attempt failed; completed: it ended without
// re-running; available: alive).
func queueRerun(t *testing.T, f *flow, ep Episode, state rivertype.JobState) {
	t.Helper()
	ctx := context.Background()
	err := f.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		res, err := f.deps.River().InsertTx(ctx, tx, RerunArgs{Repository: ep.Repository, RunID: ep.RunID, Attempt: ep.RunAttempt,
			InstallationID: ep.InstallationID}, &river.InsertOpts{MaxAttempts: jobAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true}})
		if err != nil || state == rivertype.JobStateAvailable {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE river_job SET state = $1, attempt = max_attempts, finalized_at = CURRENT_TIMESTAMP
			WHERE id = $2`, string(state), res.Job.ID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func sweep(t *testing.T, f *flow) {
	t.Helper()
	job := &river.Job[RerunSweepArgs]{JobRow: &rivertype.JobRow{ID: 1, Attempt: 1, MaxAttempts: jobAttempts}}
	if err := (&rerunSweepWorker{f: f}).Work(context.Background(), job); err != nil {
		t.Fatalf("sweep: %v", err)
	}
}

// The re-run job's last attempt could not reach the database: it neither
// re-ran nor recorded an alert, and the episode waited in retry_scheduled
// for ever. The sweep queues the retry again once it is well overdue (never
// while a job for it is alive), or alerts when that cannot help.
func TestSweepEndsRetriesNoJobWillCarryOut(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		f, fake, clock := rerunFixture(t, dbURL)
		ctx := context.Background()
		rerunPosts := func() int { return fake.Count("POST", "/repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs") }
		for _, id := range []int64{71, 72, 73, 74} {
			fake.AddWorkflowRun("acme/checkout", githubtest.WorkflowRun{ID: id})
		}
		lost := scheduled(t, f, 71, time.Now().Add(-time.Hour))
		queueRerun(t, f, lost, rivertype.JobStateDiscarded)
		alive := scheduled(t, f, 72, time.Now().Add(-time.Hour))
		queueRerun(t, f, alive, rivertype.JobStateAvailable)
		ended := scheduled(t, f, 73, time.Now().Add(-time.Hour))
		queueRerun(t, f, ended, rivertype.JobStateCompleted)

		sweep(t, f) // nothing is overdue yet: a due job may wait for a worker
		if jobs := rerunJobs(t, f, 71); jobs[rivertype.JobStateAvailable] != 0 || checkoutEpisode(t, f, 73).State != StateRetryScheduled {
			t.Fatalf("swept before the retries were overdue: jobs of 71 %v, episode 73 %s", jobs, checkoutEpisode(t, f, 73).State)
		}

		clock.Sleep(ctx, rerunOverdue+time.Minute)
		sweep(t, f)
		if jobs := rerunJobs(t, f, 71); jobs[rivertype.JobStateAvailable] != 1 {
			t.Errorf("jobs of the lost retry %v, want it queued again", jobs)
		}
		if jobs := rerunJobs(t, f, 72); jobs[rivertype.JobStateAvailable] != 1 || len(jobs) != 1 {
			t.Errorf("jobs of the retry with a live job %v, want that one job only", jobs)
		}
		if ep := checkoutEpisode(t, f, 72); ep.State != StateRetryScheduled || ep.Seq != alive.Seq {
			t.Errorf("episode with a live job: %s (seq %d), want untouched", ep.State, ep.Seq)
		}
		if ep := checkoutEpisode(t, f, 73); ep.State != StateAlerted || ep.Decision.Rule != RuleRerunLost {
			t.Errorf("episode whose job ended without re-running: %s, rule %s; want alerted %s", ep.State, ep.Decision.Rule, RuleRerunLost)
		}
		if n := countJobs(t, f, "recovery_alert"); n != 1 {
			t.Errorf("alert jobs = %d, want 1", n)
		}

		// A second sweep, racing the re-queued job: nothing twice.
		sweep(t, f)
		if jobs := rerunJobs(t, f, 71); jobs[rivertype.JobStateAvailable] != 1 {
			t.Errorf("jobs of the lost retry after a second sweep %v, want still one", jobs)
		}
		before := rerunPosts()
		fire(t, f, 71)
		fire(t, f, 71) // the job run again: the episode no longer waits
		if n := rerunPosts() - before; n != 1 {
			t.Errorf("re-runs = %d, want 1", n)
		}
		if ep := checkoutEpisode(t, f, 71); ep.State != StateRetrying {
			t.Errorf("episode of the lost retry: %s, want retrying", ep.State)
		}

		// Past a day, re-running a retry no job carried out would surprise:
		// it is an alert, and no job is queued.
		late := scheduled(t, f, 74, time.Now().Add(-time.Hour))
		queueRerun(t, f, late, rivertype.JobStateDiscarded)
		clock.Sleep(ctx, rerunRequeueLimit+time.Hour)
		sweep(t, f)
		if jobs := rerunJobs(t, f, 74); jobs[rivertype.JobStateAvailable] != 0 {
			t.Errorf("jobs of a retry a day late %v, want none queued", jobs)
		}
		if ep := checkoutEpisode(t, f, 74); ep.State != StateAlerted || ep.Decision.Rule != RuleRerunLost {
			t.Errorf("episode a day late: %s, rule %s; want alerted %s", ep.State, ep.Decision.Rule, RuleRerunLost)
		}
	})
}
