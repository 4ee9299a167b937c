package records

import (
	"context"
	"database/sql"
	"testing"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

func TestLockClustersHoldsEveryNamedClusterUntilTheTransactionEnds(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, db := openStore(t, dbURL)
		openRelease(t, s, record("R1", "", 0))
		ctx := context.Background()
		held := func() int {
			if db.Dialect != store.Postgres {
				return 0 // SQLite's one writer connection serialises writers
			}
			// pg_locks lists the whole server's locks: those of the tests
			// running beside this one, on databases of their own, too.
			return count(t, s, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND granted
				AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, clusterLockClass)
		}
		want := map[store.Dialect]int{store.Postgres: 3, store.SQLite: 0}[db.Dialect]
		err := db.InTx(ctx, func(tx *sql.Tx) error {
			lctx, err := s.LockClusters(ctx, tx, "prod-us", "prod-eu", "prod-ap", "prod-eu")
			if err != nil {
				return err
			}
			if n := held(); n != want {
				t.Errorf("%d cluster locks held, want %d (three clusters, one named twice)", n, want)
			}
			// ApplyFact under the locks' context applies as it does alone.
			res, err := s.ApplyFact(lctx, tx, fact("R1", PhaseProgressing, 1), "", at(1))
			if err == nil && res.Outcome != OutcomeApplied {
				t.Errorf("a fact under held locks: %s (%s), want applied", res.Outcome, res.Reason)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := held(); n != 0 {
			t.Errorf("%d cluster locks held after the commit, want none", n)
		}
	})
}
