package clusteractions

import (
	"context"
	"testing"
	"time"

	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// An agent cut off from the server for longer than the claim timeout
// carries the action out and reports it once it reaches the server again:
// its result is what happened, and it must not be refused because the
// server meanwhile wrote that the action may or may not have been done.
// Another agent's result stays refused.
func TestTheClaimingAgentsLateResultReplacesAnExpiredClaim(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := testdb.OpenMigrated(t, dbURL)
		s, id, now := claimedRollback(t, db, "cut-off", "")
		later := now.Add(ClaimTimeout + time.Minute)
		if _, err := s.claim(ctx, "prod-eu", "other", "", false, later); err != nil {
			t.Fatal(err)
		}
		if st, _ := Get(ctx, db.Read, id); st.State != StateFailed {
			t.Fatalf("the claim did not expire: %s", st.State)
		}
		done := actionapi.Result{Agent: "cut-off", Status: actionapi.StatusDone, Outcome: actionapi.OutcomeRolledBack,
			Audit: []actionapi.AuditEvent{{Type: string(records.AuditRollbackCompleted), At: later.Add(time.Second), Message: "rolled back"}}}
		other := done
		other.Agent = "other"
		if _, outcome, _, err := s.finish(ctx, "prod-eu", id, other, later); err != nil || outcome != finishConflict {
			t.Errorf("another agent's result: %v %v; want a conflict", outcome, err)
		}
		st, outcome, why, err := s.finish(ctx, "prod-eu", id, done, later.Add(time.Second))
		if err != nil || outcome != finishRecorded || st.State != StateDone {
			t.Fatalf("the claiming agent's late result: %v %s (%s), %v; want it recorded, done", outcome, st.State, why, err)
		}
		if _, outcome, _, _ := s.finish(ctx, "prod-eu", id, done, later.Add(2*time.Second)); outcome != finishRepeat {
			t.Errorf("the same late result again: %v, want a repeat", outcome)
		}
		evs, err := records.NewStore(db).Audit(ctx, records.AuditFilter{ReleaseID: "c2", Oldest: true})
		if err != nil || len(evs) != 2 || evs[0].Type != records.AuditRollbackFailed || evs[1].Type != records.AuditRollbackCompleted {
			t.Errorf("audit %+v %v; want the expiry's rollback_failed, then the agent's rollback_completed", evs, err)
		}
	})
}
