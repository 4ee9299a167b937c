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
	if err := s.lockClusters(ctx, tx, rec.Cluster); err != nil {
		return Record{}, nil, fmt.Errorf("open release %q: %w", rec.ReleaseID, err)
	}
	old, err := getRecord(ctx, tx, rec.ReleaseID)
	if err != nil {
		return Record{}, nil, fmt.Errorf("open release %q: %w", rec.ReleaseID, err)
	}
	if old != nil {
		if err := sameContent(*old, rec); err != nil {
			return Record{}, nil, fmt.Errorf("open release %q: %w", rec.ReleaseID, err)
		}
		return *old, nil, nil
	}
	if err := insertRecord(ctx, tx, rec); err != nil {
		return Record{}, nil, err
	}
	if err := insertAudit(ctx, tx, []AuditEvent{ev}); err != nil {
		return Record{}, nil, fmt.Errorf("open release %q: %w", rec.ReleaseID, err)
	}
	return rec, []AuditEvent{ev}, nil
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
