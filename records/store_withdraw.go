package records

import (
	"context"
	"database/sql"
	"time"
)

// WithdrawRelease applies Withdraw to the stored release in the caller's
// transaction, under its cluster's lock so that a fact applied meanwhile
// is either seen or comes after. ok is false when the release is not
// opened any more (withdrawn already, or facts moved it on): nothing is
// written then.
func (s *Store) WithdrawRelease(ctx context.Context, tx *sql.Tx, releaseID, why string, data map[string]any, now time.Time) (Record, bool, error) {
	return s.endOpened(ctx, tx, "withdraw", releaseID, now, func(r Record, now time.Time) (Record, []AuditEvent, bool) {
		next, ev, ok := Withdraw(r, why, data, now)
		return next, []AuditEvent{ev}, ok
	})
}
