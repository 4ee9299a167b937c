package records

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// WithdrawRelease applies Withdraw to the stored release in the caller's
// transaction, under its cluster's lock so that a fact applied meanwhile
// is either seen or comes after. ok is false when the release is not
// opened any more (withdrawn already, or facts moved it on): nothing is
// written then.
func (s *Store) WithdrawRelease(ctx context.Context, tx *sql.Tx, releaseID, why string, data map[string]any, now time.Time) (Record, bool, error) {
	now = storedTime(now)
	fail := func(err error) (Record, bool, error) {
		return Record{}, false, fmt.Errorf("withdraw release %s: %w", releaseID, err)
	}
	rec, err := s.getRecord(ctx, tx, releaseID)
	if err == nil && rec == nil {
		err = ErrNotFound
	}
	if err != nil {
		return fail(err)
	}
	if err := s.lockClusters(ctx, tx, rec.Cluster); err != nil {
		return fail(err)
	}
	if rec, err = s.getRecord(ctx, tx, releaseID); err != nil || rec == nil {
		return fail(fmt.Errorf("read again after locking: %w", firstErr(err, ErrNotFound)))
	}
	next, ev, ok := Withdraw(*rec, why, data, now)
	if !ok {
		return *rec, false, nil
	}
	if err := s.updateRecord(ctx, tx, next); err != nil {
		return fail(err)
	}
	if err := s.insertAudit(ctx, tx, []AuditEvent{ev}); err != nil {
		return fail(err)
	}
	return next, true, nil
}
