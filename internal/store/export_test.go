package store

import (
	"context"
	"time"
)

// UpTo applies ripcord's migrations up to version v only (not River's), for
// tests of one migration against rows written before it.
func (db *DB) UpTo(ctx context.Context, v int64) error {
	p, err := db.goose()
	if err != nil {
		return err
	}
	_, err = p.UpTo(ctx, v)
	return err
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
