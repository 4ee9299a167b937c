package store_test

import (
	"context"
	"testing"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// migratedTo opens the database at dbURL with ripcord's migrations applied
// up to version v only, for a test of the migration after v against rows
// written before it; the database is closed when the test ends.
func migratedTo(t *testing.T, dbURL string, v int64) *store.DB {
	t.Helper()
	db := testdb.Open(t, dbURL)
	if err := db.UpTo(context.Background(), v); err != nil {
		t.Fatal(err)
	}
	return db
}
