package store

import (
	"errors"
	"fmt"
	"os"
	"sync"
)

// WAL syncing apart from the commit.
//
// With synchronous=FULL, SQLite fsyncs the WAL inside COMMIT, while it
// holds the one writer connection: no other transaction can start during
// the disk flush. The intake's group commit instead commits with NORMAL
// (frames written to the WAL, not flushed) and then calls SyncWAL, which
// flushes the WAL file through a descriptor of its own; only then are the
// batch's requests answered. The next batch is written meanwhile, so the
// flush of one batch overlaps the work of the next.
//
// This is as durable as FULL. The kernel's page cache is per file, so a
// flush through any descriptor writes what SQLite wrote through its own; a
// committed transaction's frames are in the WAL until a checkpoint has
// copied them into the database, and a checkpoint in NORMAL mode flushes
// the WAL before it copies and the database after, so frames overwritten
// after a restart of the WAL are already on disk in the database file.
// SQLite deletes the WAL only when its last connection closes (this server
// keeps its writer open); should the file be replaced anyway, SyncWAL
// notices (another inode at the path) and flushes the new one.
type walSync struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

// CanSyncWAL reports whether SyncWAL makes commits durable, so a caller
// may commit without the disk flush and call SyncWAL before it answers.
// Only SQLite has a WAL of its own to flush; a PostgreSQL commit is
// durable when it returns.
func (db *DB) CanSyncWAL() bool { return db.wal != nil }

// SyncWAL flushes SQLite's write-ahead log to disk: every transaction
// committed before the call is then durable.
func (db *DB) SyncWAL() error {
	if db.wal == nil {
		return errors.New("database: SyncWAL on a database without a SQLite WAL")
	}
	return db.wal.sync()
}

func (w *walSync) sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f != nil && !w.current() {
		w.f.Close()
		w.f = nil
	}
	if w.f == nil {
		f, err := os.Open(w.path)
		if err != nil {
			return fmt.Errorf("database: open the write-ahead log to flush it: %w", err)
		}
		w.f = f
	}
	if err := datasync(w.f); err != nil {
		return fmt.Errorf("database: flush the write-ahead log: %w", err)
	}
	return nil
}

// current reports whether the open descriptor is still the file at path.
func (w *walSync) current() bool {
	open, err := w.f.Stat()
	if err != nil {
		return false
	}
	named, err := os.Stat(w.path)
	return err == nil && os.SameFile(open, named)
}

func (w *walSync) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
}
