package store

import (
	"context"
	"fmt"
	"time"
)

// UpTo applies ripcord's migrations up to version v only (not River's), for
// tests of one migration against rows written before it. A v that is no
// migration's version is refused, nothing applied: goose would take one
// past the newest for "all of them", so a test of a migration not written
// yet (or a mistyped number) would pass its setup on the newest schema.
func (db *DB) UpTo(ctx context.Context, v int64) error {
	p, err := db.goose()
	if err != nil {
		return err
	}
	var newest int64
	for _, s := range p.ListSources() {
		if s.Version == v {
			_, err = p.UpTo(ctx, v)
			return err
		}
		newest = max(newest, s.Version)
	}
	return fmt.Errorf("migrate up to %d: there is no migration %d in %s, the newest is %d", v, v, db.Dialect, newest)
}

// DownTo reverts ripcord's migrations down to version v (not River's), v's
// own kept; 0 reverts every one of them. A v above the database's version,
// or that no migration has, is refused, nothing reverted: goose would revert
// nothing and say nothing, so a test that means to write rows as a migration
// found them (a mistyped number, or one set up at too old a version) would
// pass its setup on a schema it does not name.
func (db *DB) DownTo(ctx context.Context, v int64) error {
	p, err := db.goose()
	if err != nil {
		return err
	}
	known := v == 0
	var newest int64
	for _, s := range p.ListSources() {
		known = known || s.Version == v
		newest = max(newest, s.Version)
	}
	if !known {
		return fmt.Errorf("migrate down to %d: there is no migration %d in %s, the newest is %d", v, v, db.Dialect, newest)
	}
	current, err := p.GetDBVersion(ctx)
	if err != nil {
		return fmt.Errorf("migrate down to %d: read schema version: %w", v, err)
	}
	if v > current {
		return fmt.Errorf("migrate down to %d: the database is at %d, below it", v, current)
	}
	_, err = p.DownTo(ctx, v)
	return err
}

// SchemaVersion returns the version of ripcord's schema (not River's).
func (db *DB) SchemaVersion(ctx context.Context) (int64, error) {
	p, err := db.goose()
	if err != nil {
		return 0, err
	}
	return p.GetDBVersion(ctx)
}

// SetConnectTimeout sets the connect timeout Open gives a PostgreSQL URL
// without connect_timeout, and returns what restores it.
func SetConnectTimeout(d time.Duration) func() {
	old := defaultConnectTimeout
	defaultConnectTimeout = d
	return func() { defaultConnectTimeout = old }
}
