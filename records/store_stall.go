package records

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/ripcord/ripcord/internal/store"
)

// MarkStalled is the stall job's write: it re-reads the record in the
// caller's transaction and, when CheckStall finds it stalled and no stall
// was alerted for it yet, writes the stall_detected event, remembers the
// alert and returns the alert effect for the caller to enqueue. The bool is
// false when there is nothing to alert: not stalled, or alerted already.
// stallAfter is the repository's stall_after; 0 means DefaultStallAfter.
func (s *Store) MarkStalled(ctx context.Context, tx *sql.Tx, releaseID string, now time.Time, stallAfter time.Duration) (AuditEvent, Effect, bool, error) {
	now = storedTime(now)
	fail := func(err error) (AuditEvent, Effect, bool, error) {
		return AuditEvent{}, Effect{}, false, fmt.Errorf("check release %s for a stall: %w", releaseID, err)
	}
	// The record's cluster never changes: look it up, then lock it, so a
	// fact being applied meanwhile is either seen or comes after.
	rec, err := s.getRecord(ctx, tx, releaseID)
	if err != nil {
		return fail(err)
	}
	if rec == nil {
		return fail(ErrNotFound)
	}
	if s.db.Dialect == store.Postgres {
		if err := s.lockClusters(ctx, tx, rec.Cluster); err != nil {
			return fail(err)
		}
		if rec, err = s.getRecord(ctx, tx, releaseID); err != nil || rec == nil {
			return fail(fmt.Errorf("read again after locking: %w", firstErr(err, ErrNotFound)))
		}
	}
	if err := s.loadMergedAt(ctx, tx, rec); err != nil {
		return fail(err)
	}
	stalled, reason := CheckStall(*rec, now, stallAfter)
	if !stalled {
		return AuditEvent{}, Effect{}, false, nil
	}
	// The condition makes the alert once-only even without the lock.
	res, err := tx.ExecContext(ctx, `UPDATE records SET stall_alerted_at = $2 WHERE release_id = $1 AND stall_alerted_at IS NULL`,
		releaseID, store.Micros(now))
	if err != nil {
		return fail(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fail(err)
	}
	if n == 0 {
		return AuditEvent{}, Effect{}, false, nil // alerted already
	}
	ev, eff := Stalled(*rec, reason, now)
	if err := s.insertAudit(ctx, tx, []AuditEvent{ev}); err != nil {
		return fail(err)
	}
	return ev, eff, true, nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// StallCandidate is a release waiting for its first fact with no stall
// alert yet: Repository says whose stall_after governs it.
type StallCandidate struct {
	ReleaseID  string
	Repository string
	CreatedAt  time.Time
}

// StallCandidates lists, oldest first and at most limit, the releases that
// opened at or before openedBy, got no fact since and raised no stall alert
// yet: those MarkStalled may alert for, once their repository's stall_after
// has passed. It lets a periodic scan catch every release, whoever opened it
// and whether or not its own timer was queued. after is the last candidate
// of the previous page (the zero value for the first page), so a scan can
// page past releases whose stall_after has not passed yet.
func (s *Store) StallCandidates(ctx context.Context, openedBy time.Time, after StallCandidate, limit int) ([]StallCandidate, error) {
	var waiting []any
	for _, st := range States {
		if !st.Settled() {
			waiting = append(waiting, string(st))
		}
	}
	args := append([]any{store.Micros(storedTime(openedBy)), limit}, waiting...)
	page := ""
	if after.ReleaseID != "" {
		n := len(args)
		page = fmt.Sprintf(` AND (created_at > $%d OR (created_at = $%d AND release_id > $%d))`, n+1, n+1, n+2)
		args = append(args, store.Micros(storedTime(after.CreatedAt)), after.ReleaseID)
	}
	rows, err := s.db.Read.QueryContext(ctx, `SELECT release_id, repository, created_at FROM records
		WHERE last_fact_at IS NULL AND stall_alerted_at IS NULL AND `+stallClockCondition+` AND state IN (`+placeholders(3, len(waiting))+`)`+page+`
		ORDER BY created_at, release_id LIMIT $2`, args...)
	if err != nil {
		return nil, fmt.Errorf("find releases waiting for a first fact: %w", err)
	}
	defer rows.Close()
	var out []StallCandidate
	for rows.Next() {
		var c StallCandidate
		var created int64
		if err := rows.Scan(&c.ReleaseID, &c.Repository, &created); err != nil {
			return nil, fmt.Errorf("find releases waiting for a first fact: %w", err)
		}
		c.CreatedAt = store.Time(created)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find releases waiting for a first fact: %w", err)
	}
	return out, nil
}
