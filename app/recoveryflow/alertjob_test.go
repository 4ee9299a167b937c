package recoveryflow

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/recovery"
)

// alerted stores an episode of run id whose decision is an alert.
func alerted(t *testing.T, f *flow, id int64) Episode {
	t.Helper()
	ep := scheduled(t, f, id, time.Now().Add(-time.Hour))
	next, ok := ep.Redecide(1, recovery.Decision{Action: recovery.ActionAlert, Rule: recovery.RuleNoPreviousVersion,
		Reason: "No earlier release is known."}, f.deps.Now())
	if !ok {
		t.Fatal("setup: not redecided")
	}
	ctx := context.Background()
	if err := f.deps.DB.InTx(ctx, func(tx *sql.Tx) error { return saveEpisode(ctx, tx, next, ep.Seq) }); err != nil {
		t.Fatal(err)
	}
	return next
}

// The job that claimed the creation of an alert issue is gone (discarded
// after GitHub failed it every time): a later alert of the same release
// takes the claim over and opens the issue, instead of waiting for the dead
// job for ever. A claim held by a live job is still waited for.
func TestAlertIssueClaimOfAJobThatIsGoneIsTakenOver(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		fake := githubtest.NewServer(t)
		f := workerFlow(t, dbURL, fake, ghclient.NewStepClock(time.Now().UTC()), nil)
		ctx := context.Background()
		claimBy := func(ep Episode, job int64) {
			if _, err := f.deps.DB.Write.ExecContext(ctx, `INSERT INTO recovery_issues (repository, alert_key, claim, created_at)
				VALUES ($1, $2, $3, 0)`, ep.Repository, ep.AlertKey(), job); err != nil {
				t.Fatal(err)
			}
		}
		work := func(id, jobID int64) error {
			job := &river.Job[AlertArgs]{JobRow: &rivertype.JobRow{ID: jobID, Attempt: 1, MaxAttempts: jobAttempts},
				Args: AlertArgs{Repository: "acme/checkout", RunID: id, Attempt: 1, InstallationID: githubtest.InstallationID}}
			return (&alertWorker{f: f}).Work(ctx, job)
		}

		gone := alerted(t, f, 41)
		claimBy(gone, 999_999) // no such job any more
		if err := work(41, 1_000_001); err != nil {
			t.Fatalf("alert with a dead claim: %v, want the issue opened", err)
		}
		if n := len(fake.Issues("acme/checkout")); n != 1 {
			t.Errorf("issues = %d, want 1", n)
		}

		live := alerted(t, f, 42)
		row, err := f.deps.River().Insert(ctx, AlertArgs{Repository: "acme/checkout", RunID: 42, Attempt: 7}, nil)
		if err != nil {
			t.Fatal(err)
		}
		claimBy(live, row.Job.ID)
		var snooze *river.JobSnoozeError
		if err := work(42, row.Job.ID+1); !errors.As(err, &snooze) {
			t.Errorf("alert while a live job creates the issue: %v, want a snooze", err)
		}
		if n := len(fake.Issues("acme/checkout")); n != 1 {
			t.Errorf("issues = %d, want still 1", n)
		}
	})
}
