package records

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// FailUnrunRelease applies FailUnrun to the stored release in the caller's
// transaction, under its cluster's lock so that a fact applied meanwhile
// is either seen or comes after. ok is false when the release is not
// opened any more (a fact moved it on, or it was ended already): nothing
// is written then.
func (s *Store) FailUnrunRelease(ctx context.Context, tx *sql.Tx, releaseID, why string, data map[string]any, now time.Time) (Record, bool, error) {
	return s.endOpened(ctx, tx, "fail", releaseID, now, func(r Record, now time.Time) (Record, []AuditEvent, bool) {
		return FailUnrun(r, why, data, now)
	})
}

// endOpened reads the release under its cluster's lock and stores what end
// makes of it, with its audit events, when end says ok.
func (s *Store) endOpened(ctx context.Context, tx *sql.Tx, verb, releaseID string, now time.Time,
	end func(Record, time.Time) (Record, []AuditEvent, bool)) (Record, bool, error) {
	now = storedTime(now)
	fail := func(err error) (Record, bool, error) {
		return Record{}, false, fmt.Errorf("%s release %s: %w", verb, releaseID, err)
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
	next, evs, ok := end(*rec, now)
	if !ok {
		return *rec, false, nil
	}
	if err := s.updateRecord(ctx, tx, next); err != nil {
		return fail(err)
	}
	if err := s.insertAudit(ctx, tx, evs); err != nil {
		return fail(err)
	}
	return next, true, nil
}
