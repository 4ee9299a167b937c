package recoveryflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
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

// alertWork runs f's alert job jobID of attempt 1 of run id.
func alertWork(f *flow) func(id, jobID int64) error {
	return func(id, jobID int64) error {
		job := &river.Job[AlertArgs]{JobRow: &rivertype.JobRow{ID: jobID, Attempt: 1, MaxAttempts: jobAttempts},
			Args: AlertArgs{Repository: "acme/checkout", RunID: id, Attempt: 1, InstallationID: githubtest.InstallationID}}
		return (&alertWorker{f: f}).Work(context.Background(), job)
	}
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
		work := alertWork(f)

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

// alertedOf stores an alerted episode of run id of release: the issue of
// the release's alerts is one for all of its runs.
func alertedOf(t *testing.T, f *flow, id int64, release string) Episode {
	t.Helper()
	in := recovery.Input{Now: f.deps.Now(), Policy: recovery.DefaultPolicy(), FailureType: "health_check_failure",
		Run: recovery.Run{ID: id, Completed: true, Attempt: 1, CreatedAt: f.deps.Now().Add(-time.Hour)}}
	ep := Episode{Repository: "acme/checkout", RunID: id, InstallationID: githubtest.InstallationID, HeadSHA: "abc", App: "checkout",
		Environment: "staging", ReleaseID: release}
	ep, _ = ep.Fail(Failure{Attempt: 1, Decision: recovery.Decision{Action: recovery.ActionAlert, Rule: recovery.RuleNoPreviousVersion,
		Reason: "No earlier release is known."}, Context: Context{Input: in}, At: f.deps.Now()})
	if ep.State != StateAlerted {
		t.Fatalf("setup: %s", ep.State)
	}
	ctx := context.Background()
	if err := f.deps.DB.InTx(ctx, func(tx *sql.Tx) error { return saveEpisode(ctx, tx, ep, 0) }); err != nil {
		t.Fatal(err)
	}
	return ep
}

// Two runs of one release alert, and the older run's alert job edits the
// release's issue after the newer one's (it was overtaken at its edit):
// GitHub keeps the last edit, so the issue must still say the newer run.
// A retried job of the older alert that starts after the newer one's
// leaves the issue to it.
func TestAnOlderAlertDoesNotLeaveItsRunOnTheIssue(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		fake := githubtest.NewServer(t)
		f := workerFlow(t, dbURL, fake, ghclient.NewStepClock(time.Now().UTC()), nil)
		work := alertWork(f)
		const release = "checkout-v2"
		alertedOf(t, f, 51, release)
		if err := work(51, 1); err != nil {
			t.Fatalf("the first alert: %v", err)
		}
		says := func(run int64) bool {
			is := fake.Issues("acme/checkout")
			return len(is) == 1 && strings.Contains(is[0].Body, fmt.Sprintf("acting on run %d ", run))
		}
		if !says(51) {
			t.Fatalf("setup: the issue does not say run 51: %+v", fake.Issues("acme/checkout"))
		}

		// Run 52 of the same release alerts while a retry of run 51's job
		// edits the issue.
		reached, release2 := fake.HoldFirst("PATCH /repos/{owner}/{repo}/issues/{issue_number}")
		done := make(chan error, 1)
		go func() { done <- work(51, 2) }()
		<-reached
		alertedOf(t, f, 52, release)
		errNewer := work(52, 3)
		release2()
		if err := <-done; err != nil || errNewer != nil {
			t.Fatalf("alert jobs: the older %v, the newer %v", err, errNewer)
		}
		if !says(52) {
			t.Errorf("the issue after both alerts: %+v; want it to say run 52, the newer alert", fake.Issues("acme/checkout"))
		}

		edits := fake.Count("PATCH", "/repos/{owner}/{repo}/issues/{issue_number}")
		if err := work(51, 4); err != nil {
			t.Fatalf("a late retry of the older alert: %v", err)
		}
		if n := fake.Count("PATCH", "/repos/{owner}/{repo}/issues/{issue_number}"); n != edits || !says(52) {
			t.Errorf("a late retry of the older alert edited the issue (%d edits, %d before): %+v", n, edits, fake.Issues("acme/checkout"))
		}
	})
}
