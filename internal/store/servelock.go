package store

import (
	"errors"
	"fmt"
	"os"
)

// ErrSQLiteInUse means another `ripcord serve` has the SQLite database.
var ErrSQLiteInUse = errors.New("another ripcord serve has this SQLite database open")

// ClaimForServe makes this process the one server of a SQLite database,
// until Close; on PostgreSQL, which several replicas share, it does
// nothing. A server on SQLite assumes it is the database's only one: at
// start it makes every job marked running available again
// (RecoverOrphanedJobs), which a second server would do to the jobs the
// first one is running, so both would carry them out; and its drain reads
// deliveries outside the transaction that claims them. A second server on
// the file is therefore refused, saying why. `ripcord migrate` and other
// readers do not claim it.
func (db *DB) ClaimForServe() error {
	if db.Dialect != SQLite {
		return nil
	}
	path, err := SQLitePath(db.Source)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("database: open %s to claim it: %w", path, err)
	}
	// Closed by Close after SQLite's connections: closing a descriptor of
	// the file drops every POSIX lock this process holds on it, SQLite's
	// included.
	db.serveLock = f
	if err := lockExclusive(f); err != nil {
		if errors.Is(err, errLocked) {
			return fmt.Errorf("database: %s: %w; SQLite takes one server (README, \"Running more than one replica\"): "+
				"stop the other, or use a postgres:// database for several replicas", path, ErrSQLiteInUse)
		}
		return fmt.Errorf("database: claim %s: %w", path, err)
	}
	return nil
}
