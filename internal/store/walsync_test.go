package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// SyncWAL flushes the file at the WAL's path: the one SQLite writes, and,
// should that file ever be replaced, the new one rather than the old inode.
func TestSyncWALFollowsTheFileAtItsPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	db, err := Open(ctx, "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !db.CanSyncWAL() {
		t.Fatal("a SQLite database cannot flush its WAL apart")
	}
	if _, err := db.Write.ExecContext(ctx, `CREATE TABLE t (v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	if err := db.SyncWAL(); err != nil {
		t.Fatalf("SyncWAL after a commit: %v", err)
	}
	first, err := db.wal.f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	named, err := os.Stat(path + "-wal")
	if err != nil || !os.SameFile(first, named) {
		t.Fatalf("SyncWAL flushed a file other than %s-wal (stat err %v)", path, err)
	}

	// Replace the file at the path (SQLite never does while it is open; a
	// stale descriptor would then flush nothing that matters).
	if err := os.Rename(path+"-wal", path+"-old"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+"-wal", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := db.SyncWAL(); err != nil {
		t.Fatalf("SyncWAL after the file was replaced: %v", err)
	}
	now, err := db.wal.f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(first, now) {
		t.Error("SyncWAL kept flushing the replaced file")
	}
	// Put SQLite's file back so the database closes cleanly.
	if err := os.Rename(path+"-old", path+"-wal"); err != nil {
		t.Fatal(err)
	}
}
