package records

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/ripcord/ripcord/internal/store"
)

// sweepBatch records are deleted per transaction, so a large sweep never
// holds SQLite's single writer for long.
const sweepBatch = 500

// Sweep deletes records past retention: settled ones (healthy, failed,
// superseded…; never one still rolling out) whose last change is older than
// retention, except the newest keep records of each app, environment and
// cluster that ran (opened ones, never deleted here, and settled ones that
// never ran — withdrawn, failed before running — deleted past retention
// whatever their place, take no place) — the
// window an eligibility check reads, so a record that makes an image
// eligible is never lost. keep must be at least the largest
// eligibility window configured. Sweep runs in its own transactions of
// sweepBatch records and returns how many records it deleted.
//
// The facts of deleted records go with them (they only served to drop
// repeats, and the retention is far longer than any redelivery), and so do
// their check run notes (release_check_notes, app/rollbackflow): a note
// outliving its release would only be shown again on the check run of a
// release opened later under the same id. The table has no foreign key to
// records (a cascade would need SQLite's table rebuilt); the notes of
// releases swept before they went with them are deleted here too. Audit
// events stay: they are the history, and drift and stall events may have
// no record at all. Observations stay too: there is one per workload, not
// per release, and dropping one would make the workload's next resync look
// like a new release and raise drift again.
func (s *Store) Sweep(ctx context.Context, now time.Time, retention time.Duration, keep int) (int, error) {
	if retention <= 0 {
		return 0, fmt.Errorf("sweep releases: retention must be positive, got %s", retention)
	}
	if keep < 0 {
		return 0, fmt.Errorf("sweep releases: keep must not be negative, got %d", keep)
	}
	cutoff := store.Micros(now.Add(-retention))
	settled := settledStates()
	candidates, err := s.sweepCandidates(ctx, cutoff, keep, settled)
	if err != nil {
		return 0, err
	}
	deleted := 0
	for start := 0; start < len(candidates); start += sweepBatch {
		batch := candidates[start:min(start+sweepBatch, len(candidates))]
		err := s.db.InTx(ctx, func(tx *sql.Tx) error {
			n, err := deleteRecords(ctx, tx, batch, cutoff, settled)
			deleted += n
			return err
		})
		if err != nil {
			return deleted, fmt.Errorf("sweep releases: %w", err)
		}
	}
	err = s.db.InTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM release_check_notes
			WHERE NOT EXISTS (SELECT 1 FROM records WHERE records.release_id = release_check_notes.release_id)`)
		return err
	})
	if err != nil {
		return deleted, fmt.Errorf("sweep releases: delete the check run notes of releases gone: %w", err)
	}
	return deleted, nil
}

// sweepCandidates ranks every target's records newest first and returns
// the ones past the window that are settled and old. A record only moves
// further from the window as newer ones arrive, so the ranking stays true
// while the batches run; state and age are checked again when deleting.
func (s *Store) sweepCandidates(ctx context.Context, cutoff int64, keep int, settled []any) ([]string, error) {
	rows, err := s.db.Read.QueryContext(ctx, `SELECT release_id FROM (
		SELECT release_id, state, updated_at, ROW_NUMBER() OVER (
			PARTITION BY app, environment, cluster ORDER BY created_at DESC, release_id DESC) AS position
		FROM records WHERE `+ranCondition+`) ranked
		WHERE position > $1 AND updated_at < $2 AND state IN (`+placeholders(3, len(settled))+`)
		UNION ALL
		SELECT release_id FROM records WHERE NOT (`+ranCondition+`) AND updated_at < $2
			AND state IN (`+placeholders(3, len(settled))+`)`,
		append([]any{keep, cutoff}, settled...)...)
	if err != nil {
		return nil, fmt.Errorf("sweep releases: find old releases: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("sweep releases: find old releases: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sweep releases: find old releases: %w", err)
	}
	return ids, nil
}

// deleteRecords deletes the batch's records that are still settled and old
// (a fact may have moved one since it was picked), then their facts.
func deleteRecords(ctx context.Context, tx *sql.Tx, batch []string, cutoff int64, settled []any) (int, error) {
	args := []any{cutoff}
	args = append(args, settled...)
	states := placeholders(2, len(settled))
	for _, id := range batch {
		args = append(args, id)
	}
	ids := placeholders(2+len(settled), len(batch))
	rows, err := tx.QueryContext(ctx, `DELETE FROM records WHERE updated_at < $1 AND state IN (`+states+`)
		AND release_id IN (`+ids+`) RETURNING release_id`, args...)
	if err != nil {
		return 0, fmt.Errorf("delete releases: %w", err)
	}
	var gone []any
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("delete releases: %w", err)
		}
		gone = append(gone, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("delete releases: %w", err)
	}
	if len(gone) == 0 {
		return 0, nil
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM facts WHERE release_id IN (`+placeholders(1, len(gone))+`)`, gone...); err != nil {
		return 0, fmt.Errorf("delete facts of deleted releases: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM release_check_notes WHERE release_id IN (`+placeholders(1, len(gone))+`)`, gone...); err != nil {
		return 0, fmt.Errorf("delete check run notes of deleted releases: %w", err)
	}
	return len(gone), nil
}

// settledStates are the states Sweep may delete, as query arguments.
func settledStates() []any {
	var out []any
	for _, s := range States {
		if s.Settled() {
			out = append(out, string(s))
		}
	}
	return out
}
