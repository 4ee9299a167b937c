package store_test

import (
	"context"
	"sync"
	"testing"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// Replicas that start together all migrate one PostgreSQL database at
// start: each waits for the one that holds the migration lock, none fails,
// and the schema ends at the newest version with every migration applied
// by exactly one of them.
func TestPostgresReplicasMigratingAtOnceApplyEachMigrationOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t, "postgres")
	const replicas = 8
	dbs := make([]*store.DB, replicas)
	for i := range dbs {
		dbs[i] = testdb.Open(t, url)
	}
	results := make([]store.MigrationResult, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, db := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = db.Migrate(ctx)
		}()
	}
	close(start)
	wg.Wait()
	applied := map[string]int{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: migrate: %v", i, err)
		}
		for _, m := range results[i].Applied {
			applied[m]++
		}
		if results[i].Version != results[0].Version {
			t.Errorf("replica %d ends at schema version %d, replica 0 at %d", i, results[i].Version, results[0].Version)
		}
	}
	if len(applied) == 0 {
		t.Fatal("no replica applied a migration to the fresh database")
	}
	for m, n := range applied {
		if n != 1 {
			t.Errorf("%s applied %d times, want once", m, n)
		}
	}
	if pending, err := dbs[0].Pending(ctx); err != nil || pending {
		t.Errorf("after the replicas migrated: pending = %v, %v; want none", pending, err)
	}
}
