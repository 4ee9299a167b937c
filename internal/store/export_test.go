package store

import "context"

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
