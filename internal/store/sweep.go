package store

import (
	"context"
	"database/sql"
)

// InRounds runs round again and again, each time in a write transaction of
// its own, until a round returns fewer than size rows, and returns the
// rows of all rounds. Sweeps delete in such rounds so that they never hold
// SQLite's one writer for long, and a round done stays done when a later
// one fails.
func (db *DB) InRounds(ctx context.Context, size int, round func(tx *sql.Tx) (int, error)) (int, error) {
	total := 0
	for {
		var n int
		err := db.InTx(ctx, func(tx *sql.Tx) error {
			var err error
			n, err = round(tx)
			return err
		})
		if err != nil {
			return total, err
		}
		total += n
		if n < size {
			return total, nil
		}
	}
}

// RiverLiveStates are the states, as a SQL list, of a job in river_job
// that will still run.
const RiverLiveStates = `'available', 'pending', 'retryable', 'running', 'scheduled'`

// RiverJobArg is the SQL expression for a top-level argument of a job in
// river_job: jsonb on PostgreSQL, SQLite's JSONB in a blob on SQLite.
func RiverJobArg(dialect Dialect, name string) string {
	if dialect == Postgres {
		return `args->>'` + name + `'`
	}
	return `json_extract(args, '$.` + name + `')`
}
