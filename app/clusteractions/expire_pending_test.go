package clusteractions

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// An action no agent claimed within the claim timeout is never handed out
// after it, even on a poll in a server's first minutes (the grace kept for
// claims), and ends failed, not_claimed; one inside the bound is handed
// out.
func TestAPendingActionNoAgentTookWithinTheClaimTimeoutIsNeverHandedOut(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := testdb.OpenMigrated(t, dbURL)
		old := enqueueRollback(t, db, "v2", "c2", "")
		queued := time.Now().UTC()
		later := queued.Add(ClaimTimeout + time.Minute)
		// A server that started just now: within claimGrace.
		s := &actionStore{db: db, records: records.NewStore(db), started: later}
		if work, err := s.hasWork(ctx, "prod-eu", "agent-1", "", false, later); err != nil || !work {
			t.Errorf("hasWork: %v %v; want the stale pending action seen, so a poll fails it", work, err)
		}
		if got, err := s.claim(ctx, "prod-eu", "agent-1", "", false, later); err != nil || len(got) != 0 {
			t.Fatalf("an agent got %+v (%v) an hour after the action was queued: a rollback nobody expects", got, err)
		}
		st, err := Get(ctx, db.Read, old)
		if err != nil || st.State != StateFailed || st.Result == nil || st.Result.ErrorType != "not_claimed" ||
			st.Result.Status != actionapi.StatusFailed || st.Agent != "" ||
			!strings.Contains(st.Result.Reason, "no agent of cluster prod-eu took the action within 1h0m0s") ||
			!strings.Contains(st.Result.Reason, "nothing was done") {
			t.Fatalf("after the bound: %+v %+v %v; want failed, not_claimed, saying nothing was done", st, st.Result, err)
		}
		evs, err := records.NewStore(db).Audit(ctx, records.AuditFilter{ReleaseID: "c2"})
		if err != nil || len(evs) != 1 || evs[0].Type != records.AuditRollbackFailed ||
			evs[0].Data["error_type"] != "not_claimed" || evs[0].Data["action_id"] != old {
			t.Errorf("audit %+v %v; want one rollback_failed, not_claimed, of the action", evs, err)
		}
		res := actionapi.Result{Agent: "agent-1", Status: actionapi.StatusDone, Outcome: actionapi.OutcomeRolledBack}
		if _, outcome, why, err := s.finish(ctx, "prod-eu", old, res, later); err != nil || outcome != finishConflict {
			t.Errorf("a result for the action that was never claimed: %v (%s) %v; want a conflict", outcome, why, err)
		}

		fresh := enqueueRollback(t, db, "v3", "c3", "")
		inside := time.Now().UTC().Add(ClaimTimeout - time.Minute)
		if got, err := s.claim(ctx, "prod-eu", "agent-1", "", false, inside); err != nil || len(got) != 1 || got[0].ID != fresh {
			t.Fatalf("an action queued %s ago: %+v %v; want it handed out", ClaimTimeout-time.Minute, got, err)
		}
	})
}
