package clusteractions_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/clusteractions"
	"github.com/ripcord/ripcord/app/recoveryflow"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// A cluster whose agent is down sends no poll, and a rollback is needed
// most exactly then: its action, which no agent ever polls for, still ends
// not_claimed after the claim timeout, through the server's own periodic
// sweep (run on start), and its episode ends rollback_failed with an alert
// and its rollback release failed, as a poll's expiry would leave them. An
// action within its time is left pending.
func TestAnActionNoAgentEverPollsForEndsThroughTheSweep(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := startServer(t, dbURL)
		e, id := queuedAgo(t, s, 800, clusteractions.ClaimTimeout+time.Minute)
		inTime, fresh := queuedAgo(t, s, 801, clusteractions.ClaimTimeout-10*time.Minute)
		s.Stop()
		s.Start() // the sweep runs on start; no agent of prod-eu polls at all

		deadline := time.Now().Add(waitFor)
		for st := s.action(id); st.State != clusteractions.StateFailed; st = s.action(id) {
			if time.Now().After(deadline) {
				t.Fatalf("action %s is %s %+v, want failed not_claimed without any poll", id, st.State, st.Result)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if st := s.action(id); st.Result == nil || st.Result.ErrorType != "not_claimed" ||
			!strings.Contains(st.Result.Reason, "no agent of cluster prod-eu took the action within 1h0m0s") {
			t.Errorf("the expired action: %+v, want not_claimed with the expiry's reason", st.Result)
		}
		e.rollbackReleaseFailed(t, s, id, "not_claimed")
		e.waitEnded(t, s, "no agent of cluster prod-eu took the action")
		if _, d := e.read(t, s); !strings.Contains(d.Reason, "not_claimed") || !strings.Contains(d.Reason, id) {
			t.Errorf("episode reason %q does not name action %s and not_claimed", d.Reason, id)
		}
		settledJobs(t, s, "recovery_rollback_outcome", "cluster_actions_expiry_sweep")
		if n := e.alerts(t, s); n != 1 {
			t.Errorf("%d alerts queued, want 1", n)
		}
		if got := auditTypesOf(s.audit(e.failed), id); got != string(records.AuditRollbackFailed) {
			t.Errorf("audit of the failed release for the action: %q, want one rollback_failed", got)
		}

		if st := s.action(fresh); st.State != clusteractions.StatePending || st.Result != nil {
			t.Errorf("the action within its time: %s %+v, want pending", st.State, st.Result)
		}
		if state, _ := inTime.read(t, s); state != string(recoveryflow.StateRollingBack) {
			t.Errorf("the episode of the action within its time is %s, want rolling_back", state)
		}
		if n := inTime.alerts(t, s); n != 0 {
			t.Errorf("%d alerts for the action within its time, want 0", n)
		}
	})
}
