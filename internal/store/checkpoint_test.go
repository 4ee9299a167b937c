package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// A writer that never pauses, but holds the gate while it writes, must not
// make the WAL grow for as long as it writes: the checkpointer finds a
// moment behind the gate and the WAL starts over.
func TestWALStartsOverUnderSteadyWrites(t *testing.T) {
	t.Parallel()
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
	type seen struct {
		largest  int64
		restarts uint32
	}
	result := make(chan seen)
	go func() { // the checkpointer's ticks, back to back
		var s seen
		first, ok := uint32(0), false
		for !done.Load() {
			db.checkpointer.checkpoint()
			if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > s.largest {
				s.largest = fi.Size()
			}
			if n, err := walCheckpointSeq(path + "-wal"); err == nil {
				if !ok {
					first, ok = n, true
				}
				s.restarts = n - first
			}
		}
		result <- s
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
	s := <-result
	t.Logf("%d MiB written, WAL at most %.1f MiB, started over %d times", total>>20, float64(s.largest)/(1<<20), s.restarts)
	// How far the WAL grows before a restart depends on how the scheduler
	// treats the two goroutines (on a loaded machine up to half of what was
	// written); that it starts over, again and again, does not.
	if s.restarts < 2 {
		t.Errorf("the WAL started over %d times while %d MiB were written: a steady writer kept it growing", s.restarts, total>>20)
	}
	if s.largest > total*3/4 {
		t.Errorf("WAL grew to %d bytes for %d written: it did not start over in time", s.largest, total)
	}
}

// walCheckpointSeq reads the checkpoint sequence number of a WAL file's
// header (bytes 12 to 16, big-endian), which SQLite increments each time
// the WAL starts over from its beginning.
func walCheckpointSeq(path string) (uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var hdr [16]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(hdr[12:16]), nil
}
