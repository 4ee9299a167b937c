package recoveryflow_test

import (
	"slices"
	"testing"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow"
	"github.com/ripcord/ripcord/internal/testdb"
)

// The same failure delivered again (GitHub's Redeliver keeps the delivery
// id) and once more under a new id (GitHub sending twice) re-runs once.
func TestRedeliveredFailureReRunsOnce(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL, repoConfig(3, "1ms"), app.Options{})
		const run = 5004
		s.failedRun(run)
		s.fact(run, 1, "failed", "health_check_failure", "checkout-v2", "v2")
		body := s.WorkflowRun(runPayload(s, run, 1, "failure"))
		id := s.Deliver("workflow_run", body)
		s.Deliver("workflow_run", body) // at once, likely decided in the same batch
		s.WaitFor("the re-run", wait, func() bool { return s.reruns() == 1 })
		s.Settle(jobKinds...)
		// Later, one by one, each after the episode moved on.
		for range 3 {
			s.Redeliver("workflow_run", id, body)
			s.Settle(jobKinds...)
		}
		s.Deliver("workflow_run", body)
		s.Settle(jobKinds...)
		s.logCalls(t)

		if n := s.reruns(); n != 1 {
			t.Errorf("re-runs = %d, want 1", n)
		}
		if n := s.Int(`SELECT COUNT(*) FROM deliveries WHERE event = 'workflow_run'`); n != 3 {
			t.Errorf("stored deliveries = %d, want 3 (redeliveries of one id are one)", n)
		}
		if got := s.auditTypes("checkout-v2"); !slices.Equal(got, []string{"failure_detected", "retry_initiated"}) {
			t.Errorf("audit trail = %v: the failure was decided more than once", got)
		}
		if n := s.Int(`SELECT retry_count FROM episodes WHERE run_id = $1`, run); n != 1 {
			t.Errorf("retry_count = %d, want 1", n)
		}
		if n := s.Count("POST", checkRuns, 0); n != 1 {
			t.Errorf("check runs created = %d, want 1", n)
		}
	})
}

// serve stopped during the backoff: the scheduled re-run is in the
// database, fires once after the next start, and not before.
func TestRetryScheduledBeforeARestartFiresOnceAfterIt(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL, repoConfig(3, "3s"), app.Options{})
		const run = 5005
		s.failedRun(run)
		s.failAttempt(run, 1)
		s.waitState(run, recoveryflow.StateRetryScheduled)
		s.WaitFor("the re-run to be scheduled", wait, func() bool {
			return s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'recovery_rerun' AND state = 'scheduled'`) == 1
		})
		s.Stop()
		if n := s.reruns(); n != 0 {
			t.Fatalf("re-runs before the restart = %d, want 0: the backoff had not passed", n)
		}
		s.Restart()
		s.waitState(run, recoveryflow.StateRetrying)
		s.Settle(jobKinds...)
		s.logCalls(t)
		if n := s.reruns(); n != 1 {
			t.Errorf("re-runs after the restart = %d, want 1", n)
		}
	})
}
