package clusteractions

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// A poll of one namespace's agent finds no work in another namespace's
// pending action (it would claim nothing, in a write transaction, every
// pollInterval of its wait), but it still expires every namespace's
// actions of its cluster, as the sweep does: the action of a namespace
// whose agent is down ends not_claimed at the next poll of any agent.
func TestAPollOfOneNamespaceExpiresTheOtherNamespacesActionsButIsNotWokenByThem(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := testdb.OpenMigrated(t, dbURL)
		id := enqueueRollback(t, db, "v2", "c2", "") // in shop
		now := time.Now().UTC()
		s := &actionStore{db: db, records: records.NewStore(db), started: now.Add(-time.Hour)}
		if work, err := s.hasWork(ctx, "prod-eu", "agent-b", "team-b", false, now); err != nil || work {
			t.Errorf("hasWork for team-b with only shop's action pending: %v %v; want none", work, err)
		}
		if work, err := s.hasWork(ctx, "prod-eu", "agent-shop", "shop", false, now); err != nil || !work {
			t.Errorf("hasWork for shop: %v %v; want its action seen", work, err)
		}
		later := now.Add(ClaimTimeout + time.Minute)
		if work, err := s.hasWork(ctx, "prod-eu", "agent-b", "team-b", false, later); err != nil || !work {
			t.Errorf("hasWork for team-b once shop's action is stale: %v %v; want it seen, so the poll fails it", work, err)
		}
		if got, err := s.claim(ctx, "prod-eu", "agent-b", "team-b", false, later); err != nil || len(got) != 0 {
			t.Fatalf("team-b's agent got %+v (%v); want nothing", got, err)
		}
		st, err := Get(ctx, db.Read, id)
		if err != nil || st.State != StateFailed || st.Result == nil || st.Result.ErrorType != errTypeNotClaimed {
			t.Fatalf("shop's stale action after team-b's poll: %+v %v; want failed, not_claimed", st, err)
		}
		// The cluster's agents may all be up: the alert says which one
		// was missing.
		if !strings.Contains(st.Result.Reason, "handed only to an agent watching namespace shop, or every namespace") {
			t.Errorf("reason %q; want it to name the namespace whose agent never took the action", st.Result.Reason)
		}
	})
}
