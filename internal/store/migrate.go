package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed migrations
var migrations embed.FS

// migrationLockKey serialises migrations of several replicas on PostgreSQL.
const migrationLockKey = 0x72697063 // "ripc"

// RiverDriver returns the job queue's driver for this database. Both are
// database/sql drivers so that ripcord's own writes and River's job changes
// share one *sql.Tx.
func (db *DB) RiverDriver() riverdriver.Driver[*sql.Tx] {
	if db.Dialect == SQLite {
		return riversqlite.New(db.Write)
	}
	return riverdatabasesql.New(db.Write)
}

func (db *DB) goose() (*goose.Provider, error) {
	sub, err := fs.Sub(migrations, "migrations/"+string(db.Dialect))
	if err != nil {
		return nil, err
	}
	dialect := goose.DialectSQLite3
	if db.Dialect == Postgres {
		dialect = goose.DialectPostgres
	}
	return goose.NewProvider(dialect, db.Write, sub)
}

// MigrationResult says what Migrate did.
type MigrationResult struct {
	Applied []string // ripcord's migration files applied now
	Version int64    // ripcord's schema version after
	River   int      // River's migrations applied now
}

// Migrate applies ripcord's and River's pending migrations. It is safe to run
// from several replicas at once.
func (db *DB) Migrate(ctx context.Context) (MigrationResult, error) {
	var res MigrationResult
	unlock, err := db.lock(ctx)
	if err != nil {
		return res, err
	}
	defer unlock()

	p, err := db.goose()
	if err != nil {
		return res, fmt.Errorf("migrate: %w", err)
	}
	applied, err := p.Up(ctx)
	if err != nil {
		return res, fmt.Errorf("migrate ripcord schema: %w", err)
	}
	for _, a := range applied {
		res.Applied = append(res.Applied, a.Source.Path)
	}
	if res.Version, err = p.GetDBVersion(ctx); err != nil {
		return res, fmt.Errorf("migrate: read schema version: %w", err)
	}
	m, err := rivermigrate.New(db.RiverDriver(), nil)
	if err != nil {
		return res, fmt.Errorf("migrate job queue: %w", err)
	}
	rr, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return res, fmt.Errorf("migrate job queue: %w", err)
	}
	res.River = len(rr.Versions)
	return res, nil
}

// Pending reports whether any migration is not applied yet; /readyz uses it.
func (db *DB) Pending(ctx context.Context) (bool, error) {
	p, err := db.goose()
	if err != nil {
		return false, err
	}
	pending, err := p.HasPending(ctx)
	if err != nil || pending {
		return pending, err
	}
	m, err := rivermigrate.New(db.RiverDriver(), nil)
	if err != nil {
		return false, err
	}
	v, err := m.Validate(ctx, nil)
	if err != nil {
		return false, err
	}
	return !v.OK, nil
}

func (db *DB) lock(ctx context.Context) (func(), error) {
	if db.Dialect != Postgres {
		return func() {}, nil // one writer connection: SQLite serialises for us
	}
	conn, err := db.Write.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, migrationLockKey); err != nil {
		conn.Close()
		return nil, fmt.Errorf("migrate: take the migration lock: %w", err)
	}
	return func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLockKey)
		conn.Close()
	}, nil
}

// RecoverOrphanedJobs makes jobs that were running when the previous process
// died available again. Only on SQLite, where one process owns the file, can a
// job in the running state at start be known to be orphaned; on PostgreSQL
// River's rescuer returns them after the job timeout, since another replica may
// still be working on them.
func (db *DB) RecoverOrphanedJobs(ctx context.Context) (int64, error) {
	if db.Dialect != SQLite {
		return 0, nil
	}
	res, err := db.Write.ExecContext(ctx, `UPDATE river_job SET state = 'available' WHERE state = 'running'`)
	if err != nil {
		return 0, fmt.Errorf("requeue orphaned jobs: %w", err)
	}
	return res.RowsAffected()
}
