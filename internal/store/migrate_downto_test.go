package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// DownTo, the helper a migration's test goes back before it with, refuses a
// version above the database's and one no migration has, saying why, and
// reverts nothing: goose would do nothing and say nothing, so a test that
// meant to write rows as an older schema had them (set up at too old a
// version, or with a mistyped number) would write them to another schema
// than the one it names. 0 is every migration reverted; the database's own
// version is nothing to revert.
func TestDownToRefusesAVersionAboveTheDatabasesOrNoMigrationHas(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := migratedTo(t, dbURL, 10)
		version := func(db *store.DB, want int64, after string) {
			t.Helper()
			got, err := db.SchemaVersion(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("schema version %d after %s, want %d", got, after, want)
			}
		}
		every, err := testdb.Open(t, testdb.URL(t, string(db.Dialect))).Migrate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		newest := every.Version
		refused := map[int64]string{
			15:         "the database is at 10, below it",
			newest:     "the database is at 10, below it",
			newest + 1: fmt.Sprintf("there is no migration %d in %s, the newest is %d", newest+1, db.Dialect, newest),
			newest + 7: fmt.Sprintf("there is no migration %d in %s, the newest is %d", newest+7, db.Dialect, newest),
			-1:         fmt.Sprintf("there is no migration -1 in %s, the newest is %d", db.Dialect, newest),
		}
		for v, why := range refused {
			if err := db.DownTo(ctx, v); err == nil || !strings.Contains(err.Error(), why) {
				t.Errorf("DownTo(%d) at 10: %v, want it refused: %q", v, err, why)
			}
			version(db, 10, fmt.Sprintf("the refused DownTo(%d)", v))
		}

		for _, v := range []int64{10, 4, 0} {
			if err := db.DownTo(ctx, v); err != nil {
				t.Errorf("DownTo(%d): %v", v, err)
			}
			version(db, v, fmt.Sprintf("DownTo(%d)", v))
		}
		if err := db.DownTo(ctx, 1); err == nil || !strings.Contains(err.Error(), "the database is at 0, below it") {
			t.Errorf("DownTo(1) with every migration reverted: %v, want it refused", err)
		}
		version(db, 0, "the refused DownTo(1)")
	})
}
