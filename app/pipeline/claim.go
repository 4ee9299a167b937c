package pipeline

import (
	"context"
	"fmt"

	"github.com/ripcord/ripcord/internal/store"
)

// Claim claims key for job in creation_claims: a job about to create
// something on GitHub that another job may be creating at the same moment
// (a gate's run, whose order decides the gate's result; a rollback branch
// and its pull request) claims its key, looks again on GitHub, creates,
// and calls release. held is false while another job River has not
// finished with holds the key: the caller waits (a snooze) or leaves the
// creation to it. A claim of a job River is done with (lost with its
// process) is taken over. release deletes the claim even once ctx ended.
func (d Deps) Claim(ctx context.Context, key string, job int64) (release func(), held bool, err error) {
	db := d.DB.Write
	release = func() {
		_, _ = db.ExecContext(context.WithoutCancel(ctx), `DELETE FROM creation_claims WHERE claim_key = $1 AND claim = $2`, key, job)
	}
	now := store.Micros(d.Now())
	if _, err := db.ExecContext(ctx, `INSERT INTO creation_claims (claim_key, claim, claimed_at) VALUES ($1, $2, $3)
		ON CONFLICT (claim_key) DO NOTHING`, key, job, now); err != nil {
		return nil, false, fmt.Errorf("claim %s: %w", key, err)
	}
	var holder int64
	if err := db.QueryRowContext(ctx, `SELECT claim FROM creation_claims WHERE claim_key = $1`, key).Scan(&holder); err != nil {
		return nil, false, fmt.Errorf("read the claim of %s: %w", key, err)
	}
	if holder == job {
		return release, true, nil
	}
	if gone, err := d.JobGone(ctx, holder); err != nil || !gone {
		return nil, false, err
	}
	res, err := db.ExecContext(ctx, `UPDATE creation_claims SET claim = $1, claimed_at = $2 WHERE claim_key = $3 AND claim = $4`,
		job, now, key, holder)
	if err != nil {
		return nil, false, fmt.Errorf("take over the claim of %s: %w", key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, false, fmt.Errorf("take over the claim of %s: %w", key, err)
	}
	return release, n == 1, nil
}
