package recoveryflow

import (
	"context"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A failed run looks for a rollback of its release already under way on
// every rollback it decides: through the partial index of the episodes
// rolling back, not a walk of every episode kept. (A parameter for the
// state, as the query had, keeps both databases off a partial index.)
func TestTheRollbackUnderWayIsFoundThroughAnIndex(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		db := testdb.OpenMigrated(t, dbURL)
		ctx := context.Background()
		tx, err := db.Read.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback() }()
		if db.Dialect == store.Postgres {
			// Few rows make any table cheap to walk: forbid the walk, so
			// that the plan shows whether the index can serve at all.
			if _, err := tx.ExecContext(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
				t.Fatal(err)
			}
		}
		plan := testdb.Plan(t, tx, db.Dialect, rollingBackSQL, "r1:prod-eu/prod", "acme/checkout", 7)
		if got := strings.Join(plan, "; "); !strings.Contains(got, "episodes_rolling_back") {
			t.Errorf("the plan is %q, want it to read episodes_rolling_back", got)
		}
	})
}
