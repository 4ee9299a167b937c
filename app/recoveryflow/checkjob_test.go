package recoveryflow

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// The job that claimed the creation of an episode's check run is gone:
// the next check-run job takes the claim over and creates the check run,
// instead of snoozing for ever behind it. A live claimant is waited for.
func TestCheckRunClaimOfAJobThatIsGoneIsTakenOver(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		fake := githubtest.NewServer(t)
		f := workerFlow(t, dbURL, fake, ghclient.NewStepClock(time.Now().UTC()), nil)
		ctx := context.Background()
		claimBy := func(ep Episode, job int64) {
			if _, err := f.deps.DB.Write.ExecContext(ctx, `UPDATE episodes SET check_claim = $3 WHERE repository = $1 AND run_id = $2`,
				ep.Repository, ep.RunID, job); err != nil {
				t.Fatal(err)
			}
		}
		work := func(ep Episode, jobID int64) error {
			job := &river.Job[CheckArgs]{JobRow: &rivertype.JobRow{ID: jobID, Attempt: 1, MaxAttempts: jobAttempts},
				Args: CheckArgs{Repository: ep.Repository, RunID: ep.RunID, Seq: ep.Seq, InstallationID: githubtest.InstallationID}}
			return (&checkWorker{f: f}).Work(ctx, job)
		}
		created := func() int { return fake.Count("POST", "/repos/{owner}/{repo}/check-runs") }

		live := scheduled(t, f, 52, time.Now().Add(-time.Hour))
		row, err := f.deps.River().Insert(ctx, CheckArgs{Repository: live.Repository, RunID: 52, Seq: 99}, nil)
		if err != nil {
			t.Fatal(err)
		}
		claimBy(live, row.Job.ID)
		var snooze *river.JobSnoozeError
		if err := work(live, row.Job.ID+1); !errors.As(err, &snooze) || created() != 0 {
			t.Errorf("check run while a live job creates it: %v, %d created; want a snooze", err, created())
		}

		gone := scheduled(t, f, 51, time.Now().Add(-time.Hour))
		claimBy(gone, 999_999) // no such job any more
		if err := work(gone, 1_000_001); err != nil {
			t.Fatalf("check run with a dead claim: %v, want it created", err)
		}
		if created() != 1 {
			t.Errorf("check runs created = %d, want 1", created())
		}
		var id int64
		if err := f.deps.DB.Read.QueryRow(`SELECT check_run_id FROM episodes WHERE run_id = 51`).Scan(&id); err != nil || id == 0 {
			t.Errorf("check run id stored = %d (%v), want the created one", id, err)
		}
	})
}
