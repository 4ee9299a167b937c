package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// UpTo, the helper a migration's test sets its database up with, refuses a
// version no migration has, naming it and the newest, and applies nothing:
// taken for "every migration", a test of a migration not written yet (or
// of a mistyped one) would pass its setup on the newest schema and test
// nothing of what it names.
func TestUpToRefusesAVersionNoMigrationHas(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := testdb.Open(t, dbURL)
		// What every migration makes of a new database of the same kind.
		every, err := testdb.Open(t, testdb.URL(t, string(db.Dialect))).Migrate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		newest := every.Version
		for _, v := range []int64{newest + 1, newest + 7, 0} {
			err := db.UpTo(ctx, v)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("no migration %d ", v)) ||
				!strings.Contains(err.Error(), fmt.Sprintf("the newest is %d", newest)) {
				t.Errorf("UpTo(%d): %v, want it refused, naming %d and the newest, %d", v, err, v, newest)
			}
		}
		// Nothing was applied: every migration is still to run.
		all, err := db.Migrate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(all.Applied) != len(every.Applied) {
			t.Errorf("%d migrations applied after the refused UpTo, want all %d: %v", len(all.Applied), len(every.Applied), all.Applied)
		}
		if err := testdb.Open(t, testdb.URL(t, string(db.Dialect))).UpTo(ctx, newest); err != nil {
			t.Errorf("UpTo(%d), the newest: %v", newest, err)
		}
	})
}
