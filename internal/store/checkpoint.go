package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"
)

// checkpointInterval is how often the WAL is copied back into the database.
const checkpointInterval = 250 * time.Millisecond

// restartFrames is how long the WAL may grow (in frames of a 4 kB page)
// before the checkpointer makes room for it to start over (see gate).
const restartFrames = 8192

// walSizeLimit is SQLite's journal_size_limit: the WAL file a restart
// leaves, twice what restartFrames lets it grow to.
const walSizeLimit = 64 << 20

// checkpointer copies SQLite's write-ahead log back into the database file on
// its own connection. PASSIVE checkpoints never block the writer, so commits
// pay only for their own WAL append and flush.
//
// Under steady writes that is not enough: SQLite starts the WAL over from
// its beginning only when a writer begins after a checkpoint copied every
// frame, and with the intake always writing, some frames are always new.
// The WAL then grows for as long as the load lasts, and a flush of a
// growing file costs the file system a journal commit for its new blocks:
// on this project's machine ten times the flush of blocks written before
// (PERFORMANCE.md). So when a checkpoint leaves more than restartFrames
// frames in the WAL, the checkpointer takes the gate that the intake's
// group commit holds while it writes (DB.Gate), copies the few frames
// written meanwhile, and lets go: the next commit starts the WAL over, in
// blocks the file already has.
type checkpointer struct {
	db            *sql.DB
	gate          *sync.Mutex
	restartFrames int64
	quit          chan struct{}
	done          chan struct{}
}

func (db *DB) startCheckpointer(path string) error {
	conn, err := openSQLitePool("file:"+path+"?_pragma=busy_timeout(10000)", 0)
	if err != nil {
		return fmt.Errorf("database: open checkpointer: %w", err)
	}
	conn.SetMaxOpenConns(1)
	c := &checkpointer{db: conn, gate: &db.gate, restartFrames: restartFrames, quit: make(chan struct{}), done: make(chan struct{})}
	db.checkpointer = c
	go c.run()
	return nil
}

func (c *checkpointer) run() {
	defer close(c.done)
	t := time.NewTicker(checkpointInterval)
	defer t.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-t.C:
			c.checkpoint()
		}
	}
}

// checkpoint runs one PASSIVE checkpoint and, when the WAL has grown past
// restartFrames, a second one behind the gate. A failed checkpoint is
// retried at the next tick; the WAL only grows meanwhile.
func (c *checkpointer) checkpoint() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var busy, frames, copied int64
	err := c.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied)
	if err != nil || frames < c.restartFrames {
		return
	}
	c.gate.Lock()
	defer c.gate.Unlock()
	_, _ = c.db.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
}

// stop ends the loop and truncates the WAL, so a stopped server leaves one file.
func (c *checkpointer) stop() error {
	close(c.quit)
	<-c.done
	_, err := c.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	if cerr := c.db.Close(); err == nil {
		err = cerr
	}
	return err
}
