package yearseed_test

import (
	"context"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/internal/testdb/yearseed"
)

// A small history has every row Seed was asked for, on both engines: the
// benchmarks' figures are only as good as the rows under them.
func TestSeedWritesTheRowsAskedFor(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		db := testdb.OpenMigrated(t, dbURL)
		size := yearseed.Size{Repositories: 3, Environments: 2, Clusters: 2, Records: 1000,
			AuditEvents: 5000, Deliveries: 700, Rollouts: 100}
		h := yearseed.Seed(t, db, size)
		if len(h.Targets) != 12 {
			t.Errorf("%d targets, want 12", len(h.Targets))
		}
		for table, want := range map[string]int{"records": 1000, "audit_events": 5000, "deliveries": 700,
			"rollouts": 100, "rollout_batches": 300, "rollout_audit": 400} {
			var n int
			if err := db.Read.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM `+table).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != want {
				t.Errorf("%s has %d rows, want %d", table, n, want)
			}
		}
	})
}
