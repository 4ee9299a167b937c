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

// DownTo reverts ripcord's migrations down to version v.
func (db *DB) DownTo(ctx context.Context, v int64) error {
	p, err := db.goose()
	if err != nil {
		return err
	}
	_, err = p.DownTo(ctx, v)
	return err
}

// SetConnectTimeout sets the connect timeout Open gives a PostgreSQL URL
// without connect_timeout, and returns what restores it.
func SetConnectTimeout(d time.Duration) func() {
	old := defaultConnectTimeout
	defaultConnectTimeout = d
	return func() { defaultConnectTimeout = old }
}
