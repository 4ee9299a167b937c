package clusteractions

import (
	"context"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

func TestAClaimWithoutAResultFailsAfterTheClaimTimeoutAndIsNotHandedOn(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := testdb.OpenMigrated(t, dbURL)
		s, id, now := claimedRollback(t, db, "lost-agent", "")
		later := now.Add(ClaimTimeout + time.Minute)
		if work, _ := s.hasWork(ctx, "prod-eu", "new-agent", "", false, later); !work {
			t.Error("hasWork does not see the stale claim, so no poll would expire it")
		}
		got, err := s.claim(ctx, "prod-eu", "new-agent", "", false, later)
		if err != nil || len(got) != 0 {
			t.Errorf("a new agent got %v (%v): a lost claim must never be handed on", got, err)
		}
		st, err := Get(ctx, db.Read, id)
		if err != nil || st.State != StateFailed || st.Result == nil || st.Result.ErrorType != "claim_expired" {
			t.Fatalf("after the timeout: %+v %v", st, err)
		}
		evs, err := records.NewStore(db).Audit(ctx, records.AuditFilter{ReleaseID: "c2"})
		if err != nil || len(evs) != 1 || evs[0].Type != records.AuditRollbackFailed {
			t.Errorf("audit %+v %v; want one rollback_failed", evs, err)
		}
	})
}
