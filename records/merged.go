package records

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/ripcord/ripcord/internal/store"
)

// ForPullRequest reports whether the release was opened for a pull request
// (pr_url or pr_number set): it can run only once that pull request is
// merged.
func (r Record) ForPullRequest() bool { return r.PRNumber > 0 || r.PRURL != "" }

// stallSince is when r's stall clock started, and what started it. Seed 003
// (decision 6) alerts on "a record merged with no fact for N minutes": the
// release of a pull request starts waiting for facts when the pull request
// is merged, and not before (a rollback pull request waiting for review is
// not stalled); a release opened without one (POST /api/v1/releases, a task
// fact) waits from its opening. ok is false while the pull request is not
// merged: such a release cannot stall.
func stallSince(r Record) (since time.Time, what string, ok bool) {
	if !r.ForPullRequest() {
		return r.CreatedAt, "it was opened", true
	}
	if r.MergedAt == nil {
		return time.Time{}, "", false
	}
	since = *r.MergedAt
	if since.Before(r.CreatedAt) {
		since = r.CreatedAt // opened after the merge: it waits from its opening
	}
	return since, "its pull request was merged", true
}

// stallClockCondition is stallSince in SQL, for the stall scan: the
// releases whose clock started at $1 or before.
const stallClockCondition = `created_at <= $1 AND (merged_at <= $1 OR (merged_at IS NULL AND pr_number = 0 AND pr_url = ''))`

// MarkMerged records, in the caller's transaction, that pull request number
// of repository, whose page is htmlURL, was merged at at: the stall clock
// of the releases opened for it starts then. A release is the pull
// request's when its pr_url is htmlURL, or when it has no pr_url and its
// repository is the pull request's. A release marked already keeps its
// time. It returns the releases it marked.
func (s *Store) MarkMerged(ctx context.Context, tx *sql.Tx, repository, htmlURL string, number int, at time.Time) ([]string, error) {
	fail := func(err error) ([]string, error) {
		return nil, fmt.Errorf("mark the releases of %s#%d merged: %w", repository, number, err)
	}
	if number <= 0 {
		return nil, nil
	}
	rows, err := tx.QueryContext(ctx, `UPDATE records SET merged_at = $1
		WHERE merged_at IS NULL AND pr_number = $2 AND (pr_url = $3 OR (pr_url = '' AND lower(repository) = lower($4)))
		RETURNING release_id`, store.Micros(storedTime(at)), number, htmlURL, repository)
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return fail(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	return ids, nil
}

// MarkReleasesMerged records, in the caller's transaction, that the pull
// request of each release of ids was merged at at, for a caller that
// matched them itself (a rollback without pr_url whose pull request lives
// in a GitOps repository, not its own). A release marked already keeps its
// time. It returns the releases it marked.
func (s *Store) MarkReleasesMerged(ctx context.Context, tx *sql.Tx, ids []string, at time.Time) ([]string, error) {
	var marked []string
	for _, id := range ids {
		res, err := tx.ExecContext(ctx, `UPDATE records SET merged_at = $1 WHERE release_id = $2 AND merged_at IS NULL`,
			store.Micros(storedTime(at)), id)
		if err != nil {
			return marked, fmt.Errorf("mark release %s merged: %w", id, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return marked, fmt.Errorf("mark release %s merged: %w", id, err)
		} else if n > 0 {
			marked = append(marked, id)
		}
	}
	return marked, nil
}

// loadMergedAt reads rec's merged_at in tx.
func (s *Store) loadMergedAt(ctx context.Context, tx *sql.Tx, rec *Record) error {
	var merged *int64
	if err := tx.QueryRowContext(ctx, `SELECT merged_at FROM records WHERE release_id = $1`, rec.ReleaseID).Scan(&merged); err != nil {
		return fmt.Errorf("read when the pull request of release %s was merged: %w", rec.ReleaseID, err)
	}
	rec.MergedAt = store.TimePtr(merged)
	return nil
}
