package store

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// A writer that never pauses, but holds the gate while it writes, must not
// make the WAL grow for as long as it writes: the checkpointer finds a
// moment behind the gate and the WAL starts over.
func TestWALStartsOverUnderSteadyWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	db, err := Open(ctx, "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.checkpointer.restartFrames = 256 // 1 MiB of 4 kB pages
	if _, err := db.Write.ExecContext(ctx, `CREATE TABLE blobs (b BLOB NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	blob := make([]byte, 64<<10)
	const total = 32 << 20
	var done atomic.Bool
	largest := make(chan int64)
	go func() { // the checkpointer's ticks, back to back
		var max int64
		for !done.Load() {
			db.checkpointer.checkpoint()
			if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > max {
				max = fi.Size()
			}
		}
		largest <- max
	}()
	for written := 0; written < total; written += len(blob) {
		db.Gate().Lock()
		err := db.InTx(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO blobs (b) VALUES ($1)`, blob)
			return err
		})
		db.Gate().Unlock()
		if err != nil {
			done.Store(true)
			t.Fatal(err)
		}
	}
	done.Store(true)
	max := <-largest
	t.Logf("%d MiB written, WAL at most %.1f MiB", total>>20, float64(max)/(1<<20))
	if max > total/2 {
		t.Errorf("WAL grew to %d bytes for %d written: it never started over", max, total)
	}
}
