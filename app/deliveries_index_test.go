package app

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// The index that lists deliveries is ascending, so that the intake appends
// to its last leaf (a descending one made nearly every group commit rewrite
// its first leaves, PERFORMANCE.md), and the list, newest first, reads it
// backwards without sorting.
func TestDeliveriesAreListedNewestFirstFromAnAscendingIndex(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		db := testdb.OpenMigrated(t, dbURL)
		ctx := context.Background()
		switch db.Dialect {
		case store.SQLite:
			plan := testdb.Plan(t, db.Read, db.Dialect, listDeliveriesSQL, 50)
			got := strings.Join(plan, "; ")
			if !strings.Contains(got, "deliveries_received_at") || strings.Contains(got, "TEMP B-TREE") {
				t.Errorf("the list's plan is %q, want a scan of deliveries_received_at and no sort", got)
			}
		default:
			var def string
			if err := db.Read.QueryRowContext(ctx, `SELECT indexdef FROM pg_indexes WHERE indexname = 'deliveries_received_at'`).Scan(&def); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(def, "DESC") || !strings.Contains(def, "(received_at, id)") {
				t.Errorf("deliveries_received_at is %q, want it on (received_at, id) ascending", def)
			}
		}
	})
}

// The hourly sweep's look for stranded deliveries reads deliveries_retrying,
// which holds only the deliveries queued after an attempt: walking the
// whole deliveries table for them, as it did, costs a year of deliveries
// every hour (PERFORMANCE.md, session 18).
func TestStrandedDeliveriesAreFoundWithoutWalkingEveryDelivery(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		db := testdb.OpenMigrated(t, dbURL)
		ctx := context.Background()
		switch db.Dialect {
		case store.SQLite:
			plan := testdb.Plan(t, db.Read, db.Dialect, strandedSQL(db.Dialect), sweepChunk)
			for _, line := range plan {
				if strings.HasPrefix(line, "SCAN d") && line != "SCAN d USING INDEX deliveries_retrying" {
					t.Errorf("the stranded deliveries' plan has %q (all of it: %q), want a scan of deliveries_retrying only", line, plan)
				}
			}
			if !slices.Contains(plan, "SCAN d USING INDEX deliveries_retrying") {
				t.Errorf("the stranded deliveries' plan is %q, want it to read deliveries_retrying", plan)
			}
		default:
			var def string
			if err := db.Read.QueryRowContext(ctx, `SELECT indexdef FROM pg_indexes WHERE indexname = 'deliveries_retrying'`).Scan(&def); err != nil {
				t.Fatalf("deliveries_retrying: %v", err)
			}
			if !strings.Contains(def, "(received_at, id)") || !strings.Contains(def, "attempts > 0") {
				t.Errorf("deliveries_retrying is %q, want it on (received_at, id) of the deliveries queued after an attempt", def)
			}
		}
	})
}
