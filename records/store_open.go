package records

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"
)

// OpenRelease registers a release that release tooling announces (POST
// /api/v1/releases) in the caller's transaction. Sending the same release
// again is idempotent: it returns the stored record and no event. Sending
// the same release_id with different content is an error wrapping
// ErrConflict (a *ConflictError naming the field); invalid input is a
// *FieldError, as OpenRecord returns it.
func (s *Store) OpenRelease(ctx context.Context, tx *sql.Tx, r Record, now time.Time) (Record, []AuditEvent, error) {
	if r.FlowStartedAt != nil {
		t := storedTime(*r.FlowStartedAt)
		r.FlowStartedAt = &t
	}
	rec, ev, err := OpenRecord(r, storedTime(now))
	if err != nil {
		return Record{}, nil, err
	}
	if err := s.checkRollbackOf(ctx, tx, rec); err != nil {
		return Record{}, nil, fmt.Errorf("open release %q: %w", rec.ReleaseID, err)
	}
	if err := s.lockClusters(ctx, tx, rec.Cluster); err != nil {
		return Record{}, nil, fmt.Errorf("open release %q: %w", rec.ReleaseID, err)
	}
	// DO NOTHING: a task fact of another cluster (another lock) may open
	// the same release meanwhile; PostgreSQL then waits for its commit and
	// the stored record is compared like any earlier one.
	res, err := tx.ExecContext(ctx, `INSERT INTO records (`+recordColumns+`) VALUES (`+placeholders(1, recordParams)+`)
		ON CONFLICT (release_id) DO NOTHING`, recordArgs(rec)...)
	if err != nil {
		return Record{}, nil, fmt.Errorf("open release %q: %w", rec.ReleaseID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return Record{}, nil, fmt.Errorf("open release %q: %w", rec.ReleaseID, err)
	}
	if n == 0 {
		return s.existing(ctx, tx, rec)
	}
	if err := s.insertAudit(ctx, tx, []AuditEvent{ev}); err != nil {
		return Record{}, nil, fmt.Errorf("open release %q: %w", rec.ReleaseID, err)
	}
	return rec, []AuditEvent{ev}, nil
}

// checkRollbackOf refuses a rollback naming a release of another app,
// environment or cluster (a *FieldError on rollback_of): it could never
// replace it, and eligibility, the pages and the CDEvents would read it as
// if it had. A release ripcord does not know is accepted: it may be older
// than ripcord, or past retention.
func (s *Store) checkRollbackOf(ctx context.Context, tx *sql.Tx, rec Record) error {
	if rec.Kind != KindRollback || rec.RollbackOf == "" {
		return nil
	}
	of, err := s.getRecord(ctx, tx, rec.RollbackOf)
	if err != nil || of == nil {
		return err
	}
	if !of.SameTarget(rec) {
		return &FieldError{Field: "rollback_of", Message: fmt.Sprintf("release %s is of app/environment/cluster %s/%s/%s, not %s/%s/%s",
			of.ReleaseID, of.App, of.Environment, of.Cluster, rec.App, rec.Environment, rec.Cluster)}
	}
	return nil
}

// existing answers an open of a release that is stored already: the stored
// record when the content is the same, a *ConflictError otherwise.
func (s *Store) existing(ctx context.Context, tx *sql.Tx, sent Record) (Record, []AuditEvent, error) {
	old, err := s.getRecord(ctx, tx, sent.ReleaseID)
	if err == nil && old == nil {
		err = ErrNotFound // the conflicting row vanished: only a concurrent sweep could
	}
	if err == nil {
		err = sameContent(*old, sent)
	}
	if err != nil {
		return Record{}, nil, fmt.Errorf("open release %q: %w", sent.ReleaseID, err)
	}
	return *old, nil, nil
}

// sameContent compares the fields a caller sends when opening a release;
// the ones facts set (state, healthy_at…) may have moved on since.
func sameContent(stored, sent Record) error {
	flow := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return stamp(*t)
	}
	for _, f := range []struct{ field, stored, sent string }{
		{"app", stored.App, sent.App},
		{"environment", stored.Environment, sent.Environment},
		{"cluster", stored.Cluster, sent.Cluster},
		{"repository", stored.Repository, sent.Repository},
		{"kind", string(stored.Kind), string(sent.Kind)},
		{"rollback_of", stored.RollbackOf, sent.RollbackOf},
		{"rollback_reason", stored.RollbackReason, sent.RollbackReason},
		{"image", stored.Image, sent.Image},
		{"digest", stored.Digest, sent.Digest},
		{"git_revision", stored.GitRevision, sent.GitRevision},
		{"config_revision", stored.ConfigRevision, sent.ConfigRevision},
		{"pr_url", stored.PRURL, sent.PRURL},
		{"pr_number", strconv.Itoa(stored.PRNumber), strconv.Itoa(sent.PRNumber)},
		{"flow_started_at", flow(stored.FlowStartedAt), flow(sent.FlowStartedAt)},
	} {
		if f.stored != f.sent {
			return &ConflictError{ReleaseID: stored.ReleaseID, Field: f.field, Stored: f.stored, Sent: f.sent}
		}
	}
	return nil
}
