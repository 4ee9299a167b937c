package store_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A PostgreSQL whose disk is full answers pings and reads and refuses
// every write that needs a new block (SQLSTATE 53100). Such a refusal is
// the database being unavailable, as a read-only one is, also when it
// reaches the server only as text (the job queue logs its errors so), and
// CheckWrite, which answers /readyz, says so; once there is room again it
// does not.
func TestPostgresFullDiskIsUnavailable(t *testing.T) {
	t.Parallel()
	dbURL, disk := testdb.PostgresOnSmallDisk(t)
	ctx := context.Background()
	db := testdb.OpenMigrated(t, dbURL)
	if err := db.CheckWrite(ctx); err != nil {
		t.Fatalf("CheckWrite before the disk is full: %v", err)
	}
	disk.Fill()
	defer disk.Free()

	err := db.InTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO deliveries (id, event, body, received_at) VALUES ('full-1', 'ping', '\x7b7d', 1)`)
		return err
	})
	if err == nil {
		t.Fatal("a delivery was stored on a full disk: the test's disk is not full")
	}
	if !strings.Contains(err.Error(), "53100") {
		t.Fatalf("the write failed otherwise than for lack of space: %v", err)
	}
	if !store.Unavailable(err) || !store.RefusesWrites(err) {
		t.Errorf("a write refused for lack of space is not the database refusing writes (Unavailable %v, RefusesWrites %v): %v",
			store.Unavailable(err), store.RefusesWrites(err), err)
	}
	if !store.UnavailableMessage(err.Error()) {
		t.Errorf("the text of a write refused for lack of space is not taken for the database being unavailable: %q", err.Error())
	}
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("ping on a full disk: %v", err)
	}
	err = db.CheckWrite(ctx)
	if err == nil || !store.Unavailable(err) || !store.RefusesWrites(err) || !strings.Contains(err.Error(), "disk is full") {
		t.Errorf("CheckWrite on a full disk: %v, want the database refusing writes because its disk is full", err)
	}

	disk.Free()
	if err := db.CheckWrite(ctx); err != nil {
		t.Errorf("CheckWrite once the disk has room again: %v", err)
	}
}
