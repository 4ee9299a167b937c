package store_test

import (
	"context"
	"testing"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// Migration 9 on PostgreSQL: payloads compressed with lz4 (the Debian
// server CI installs has it) and the unused repository index gone.
func TestPostgresDeliveryPayloadsUseLZ4(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, testdb.URL(t, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var compression string
	err = db.Read.QueryRowContext(ctx, `SELECT attcompression::text FROM pg_attribute
		WHERE attrelid = 'deliveries'::regclass AND attname = 'body'`).Scan(&compression)
	if err != nil {
		t.Fatal(err)
	}
	if compression != "l" {
		t.Errorf("deliveries.body compression = %q, want l (lz4)", compression)
	}
	var indexes int
	if err := db.Read.QueryRowContext(ctx, `SELECT count(*) FROM pg_indexes WHERE indexname = 'deliveries_repository'`).Scan(&indexes); err != nil {
		t.Fatal(err)
	}
	if indexes != 0 {
		t.Error("deliveries_repository still exists after migration 9")
	}
}
