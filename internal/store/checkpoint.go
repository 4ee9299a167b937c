package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// checkpointInterval is how often the WAL is copied back into the database.
const checkpointInterval = 250 * time.Millisecond

// checkpointer copies SQLite's write-ahead log back into the database file on
// its own connection. PASSIVE checkpoints never block the writer, so commits
// pay only for their own WAL append and fsync.
type checkpointer struct {
	db   *sql.DB
	quit chan struct{}
	done chan struct{}
}

func (db *DB) startCheckpointer(path string) error {
	conn, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("database: open checkpointer: %w", err)
	}
	conn.SetMaxOpenConns(1)
	c := &checkpointer{db: conn, quit: make(chan struct{}), done: make(chan struct{})}
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
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			// A failed checkpoint is retried at the next tick; the WAL only grows meanwhile.
			_, _ = c.db.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
			cancel()
		}
	}
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
