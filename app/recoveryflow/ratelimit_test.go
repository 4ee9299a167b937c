package recoveryflow

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

const dispatchRoute = "POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches"

// snoozedFor fails unless err is a snooze of want: the job waits, and the
// wait counts no attempt.
func snoozedFor(t *testing.T, what string, err error, want time.Duration) {
	t.Helper()
	var snooze *river.JobSnoozeError
	if !errors.As(err, &snooze) || snooze.Duration != want {
		t.Fatalf("%s: %v; want a snooze of %s", what, err, want)
	}
}

// stateChanges are the state_changed events of the episode of run id.
func stateChanges(t *testing.T, f *flow, id int64) []records.AuditEvent {
	t.Helper()
	evs, err := f.deps.Records.Audit(context.Background(), records.AuditFilter{ReleaseID: RunKey("acme/checkout", id),
		Type: records.AuditStateChanged, Oldest: true, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// A scheduled re-run that meets GitHub's rate limit waits until the time
// GitHub names, counting no attempt, however many tries that takes within
// the hour; the try at the hour after its first wait (not later, however
// far off GitHub's time) alerts as a re-run that could not be carried out
// does, saying it was GitHub's rate limit.
func TestRateLimitedReRunWaitsThenAlertsAtTheHour(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		f, fake, clock := rerunFixture(t, dbURL)
		ctx := context.Background()
		var lift atomic.Bool
		var refused atomic.Int32
		fake.RefuseForRateLimit("POST "+rerunRoute, &lift, &refused, "Retry-After", "1500")

		t.Run("the limit holds for an hour: an alert", func(t *testing.T) {
			fake.AddWorkflowRun("acme/checkout", githubtest.WorkflowRun{ID: 31})
			scheduled(t, f, 31, clock.Now().Add(-time.Hour))
			job := rerunJob(31)
			snoozedFor(t, "first try", (&rerunWorker{f: f}).Work(ctx, job), 25*time.Minute)
			if ep := checkoutEpisode(t, f, 31); ep.State != StateRetryScheduled {
				t.Fatalf("after the first wait: state %s (%s), want the retry scheduled", ep.State, ep.Decision.Reason)
			}
			_ = clock.Sleep(ctx, 25*time.Minute)
			snoozedFor(t, "25 minutes on", (&rerunWorker{f: f}).Work(ctx, job), 25*time.Minute)
			_ = clock.Sleep(ctx, 25*time.Minute)
			// GitHub names 25 minutes again; the alert is due in 10.
			snoozedFor(t, "50 minutes on", (&rerunWorker{f: f}).Work(ctx, job), 10*time.Minute)
			if ep := checkoutEpisode(t, f, 31); ep.State != StateRetryScheduled || countJobs(t, f, "recovery_alert") != 0 {
				t.Fatalf("within the hour: state %s, %d alert jobs; want no alert", ep.State, countJobs(t, f, "recovery_alert"))
			}
			_ = clock.Sleep(ctx, 10*time.Minute)
			err := (&rerunWorker{f: f}).Work(ctx, job)
			var cancel *river.JobCancelError
			if !errors.As(err, &cancel) {
				t.Errorf("at the hour: %v, want the job ended", err)
			}
			ep := checkoutEpisode(t, f, 31)
			if ep.State != StateAlerted || ep.Decision.Rule != RuleRerunFailed || !strings.Contains(ep.Decision.Reason, "GitHub's rate limit") ||
				!strings.Contains(ep.Decision.Reason, "1h0m0s") {
				t.Errorf("at the hour: state %s, rule %s: %s; want alerted (%s), saying GitHub's rate limit held it back for 1h0m0s",
					ep.State, ep.Decision.Rule, ep.Decision.Reason, RuleRerunFailed)
			}
			if n := countJobs(t, f, "recovery_alert"); n != 1 {
				t.Errorf("%d alert jobs, want 1: the alert issue", n)
			}
			if n := refused.Load(); n != 4 {
				t.Errorf("%d re-runs refused, want 4: one per try", n)
			}
		})
		t.Run("the limit lifts within the hour: the re-run, no alert", func(t *testing.T) {
			fake.AddWorkflowRun("acme/checkout", githubtest.WorkflowRun{ID: 32})
			scheduled(t, f, 32, clock.Now().Add(-time.Hour))
			job := rerunJob(32)
			snoozedFor(t, "first try", (&rerunWorker{f: f}).Work(ctx, job), 25*time.Minute)
			lift.Store(true)
			_ = clock.Sleep(ctx, 25*time.Minute)
			if err := (&rerunWorker{f: f}).Work(ctx, job); err != nil {
				t.Fatalf("after the limit lifted: %v", err)
			}
			if ep := checkoutEpisode(t, f, 32); ep.State != StateRetrying {
				t.Errorf("after the limit lifted: state %s (%s), want retrying", ep.State, ep.Decision.Reason)
			}
		})
	})
}

// rerunRoute is the re-run of a run's failed jobs.
const rerunRoute = "/repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs"

func rerunJob(id int64) *river.Job[RerunArgs] {
	return &river.Job[RerunArgs]{JobRow: &rivertype.JobRow{ID: id, Attempt: 1, MaxAttempts: jobAttempts},
		Args: RerunArgs{Repository: "acme/checkout", RunID: id, Attempt: 1, InstallationID: githubtest.InstallationID}}
}

// A rollback dispatch that meets GitHub's rate limit waits for it, counting
// no attempt, and says so once, on the check run and in the audit trail,
// as the failed release stays live meanwhile; at the hour after its first
// wait it is rollback_failed, saying it was GitHub's rate limit. Each try
// sends the dispatch at once: a refused one started no run to look for.
func TestRateLimitedRollbackDispatchSaysSoThenAlertsAtTheHour(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		f, fake, clock := rerunFixture(t, dbURL)
		ctx := context.Background()
		fake.PutFile("acme/checkout", "main", "README.md", "checkout")
		var lift atomic.Bool
		var refused atomic.Int32
		fake.RefuseForRateLimit(dispatchRoute, &lift, &refused, "Retry-After", "1500")

		t.Run("the limit holds for an hour: rollback_failed", func(t *testing.T) {
			before := rollingBack(t, f, 71)
			checks := countJobs(t, f, "recovery_check")
			snoozedFor(t, "first try", dispatchJob(f, 71, 1), 25*time.Minute)
			ep := checkoutEpisode(t, f, 71)
			if ep.State != StateRollingBack || ep.Seq != before.Seq+1 || countJobs(t, f, "recovery_check") != checks+1 {
				t.Fatalf("after the first wait: state %s, seq %d (was %d), %d check-run jobs (were %d); want rolling_back and one check-run update",
					ep.State, ep.Seq, before.Seq, countJobs(t, f, "recovery_check"), checks)
			}
			if v := RenderCheck(ep); v.Status != "in_progress" || !strings.Contains(v.Title, "waiting for GitHub's rate limit") ||
				!strings.Contains(v.Summary, "v2 stays live") {
				t.Errorf("check run while waiting: %s %q\n%s\nwant in progress, saying the dispatch waits and v2 stays live", v.Status, v.Title, v.Summary)
			}
			for _, at := range []time.Duration{25 * time.Minute, 50 * time.Minute} {
				_ = clock.Sleep(ctx, 25*time.Minute)
				want := 25 * time.Minute
				if at == 50*time.Minute {
					want = 10 * time.Minute // the alert is due then
				}
				snoozedFor(t, at.String()+" on", dispatchJob(f, 71, 1), want)
			}
			if ep := checkoutEpisode(t, f, 71); ep.State != StateRollingBack || ep.Seq != before.Seq+1 ||
				countJobs(t, f, "recovery_check") != checks+1 || len(stateChanges(t, f, 71)) != 1 {
				t.Fatalf("after three waits: state %s, seq %d, %d check-run jobs, %d notices; want the notice once",
					ep.State, ep.Seq, countJobs(t, f, "recovery_check")-checks, len(stateChanges(t, f, 71)))
			}
			_ = clock.Sleep(ctx, 10*time.Minute)
			var cancel *river.JobCancelError
			if err := dispatchJob(f, 71, 1); !errors.As(err, &cancel) {
				t.Errorf("at the hour: %v, want the job ended", err)
			}
			ep = checkoutEpisode(t, f, 71)
			if ep.State != StateAlerted || ep.Decision.Rule != RuleRollbackFailed || !strings.Contains(ep.Decision.Reason, "GitHub's rate limit") {
				t.Errorf("at the hour: state %s, rule %s: %s; want rollback_failed, saying GitHub's rate limit", ep.State, ep.Decision.Rule, ep.Decision.Reason)
			}
			if n := refused.Load(); n != 4 {
				t.Errorf("%d dispatches refused, want 4: each try sends it", n)
			}
			if n := len(fake.Dispatches("acme/checkout")); n != 0 {
				t.Errorf("%d dispatches, want none", n)
			}
		})
		t.Run("the limit lifts: the dispatch goes, the check run says so no more", func(t *testing.T) {
			rollingBack(t, f, 72)
			snoozedFor(t, "first try", dispatchJob(f, 72, 1), 25*time.Minute)
			lift.Store(true)
			_ = clock.Sleep(ctx, 25*time.Minute)
			if err := dispatchJob(f, 72, 1); err != nil {
				t.Fatalf("after the limit lifted: %v", err)
			}
			ds := fake.Dispatches("acme/checkout")
			ep := checkoutEpisode(t, f, 72)
			if len(ds) != 1 || ep.State != StateRollingBack || ep.RollbackRunID != ds[0].RunID {
				t.Fatalf("after the limit lifted: %d dispatches, state %s, rollback run %d", len(ds), ep.State, ep.RollbackRunID)
			}
			if v := RenderCheck(ep); strings.Contains(v.Title, "rate limit") || strings.Contains(v.Summary, "rate limit") {
				t.Errorf("check run once dispatched: %q\n%s\nwant no word of the wait", v.Title, v.Summary)
			}
		})
	})
}
