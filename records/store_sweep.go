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
// superseded…; never one still rolling out, nor one in use, see
// inUseCondition) whose last change is older than
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
// repeats, and the retention is far longer than any redelivery), and so
// do the rows of the tables in belongings, in the same transaction. Audit
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
	if err := s.deleteLeftBehind(ctx); err != nil {
		return deleted, fmt.Errorf("sweep releases: %w", err)
	}
	return deleted, nil
}

// sweepCandidates returns the records past their target's window that are
// settled and old, and those that never ran and are settled and old.
//
// Only the targets with more than keep records (crowded) are ranked: one
// with keep or fewer has no record past its window. Once the sweep has
// run, a target holds more than keep only while releases younger than the
// retention, or opened ones, push its window's oldest out, so most are
// not crowded; counting a target's records reads records_target alone
// (every column it needs is there), where ranking every target read every
// record that ran, a second an hour at a year of data (PERFORMANCE.md).
// The records that never ran are found by one read of the table in its
// order: no index holds them apart, and SQLite, given records_state for
// the settled states (nearly every record), looked each one up from
// there, four times the work, so state is written past the index, as
// listQuery does. crowded is MATERIALIZED so that it is counted once:
// PostgreSQL otherwise joined it in parallel workers that each counted
// the whole table again.
//
// A record only moves further from the window as newer ones arrive, so
// the ranking stays true while the batches run; state and age are
// checked again when deleting.
func (s *Store) sweepCandidates(ctx context.Context, cutoff int64, keep int, settled []any) ([]string, error) {
	q, args := sweepQuery(cutoff, keep, settled)
	ids, err := s.releaseIDs(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sweep releases: find old releases: %w", err)
	}
	return ids, nil
}

// releaseIDs runs q, which selects release ids, on the read pool.
func (s *Store) releaseIDs(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := s.db.Read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// sweepQuery is sweepCandidates' statement and its arguments.
func sweepQuery(cutoff int64, keep int, settled []any) (string, []any) {
	return `WITH crowded AS MATERIALIZED (SELECT app, environment, cluster FROM records
			GROUP BY app, environment, cluster HAVING COUNT(*) > $1)
		SELECT release_id FROM (
		SELECT r.release_id, r.state, r.updated_at, r.kind, r.last_fact_at, r.merged_at, ROW_NUMBER() OVER (
			PARTITION BY r.app, r.environment, r.cluster ORDER BY r.created_at DESC, r.release_id DESC) AS position
		FROM crowded JOIN records r ON r.app = crowded.app AND r.environment = crowded.environment AND r.cluster = crowded.cluster
		WHERE r.` + ranCondition + `) ranked
		WHERE position > $1 AND updated_at < $2 AND state IN (` + placeholders(3, len(settled)) + `) AND NOT ` + inUseCondition + `
		UNION ALL
		SELECT release_id FROM records WHERE NOT (` + ranCondition + `) AND updated_at < $2
			AND state || '' IN (` + placeholders(3, len(settled)) + `) AND NOT ` + inUseCondition, append([]any{keep, cutoff}, settled...)
}

// inUseCondition holds for a record the sweep keeps however old and
// settled it is, because work still reads it: its rollout in waves has not
// ended (a settled release's rollout may still wait in its queue or roll
// back, and each tick reads the release), or it is a withdrawn rollback
// whose pull request a person reopened, which holds its environment until
// the pull request is merged or closed again (app/rollbackflow). Swept, the
// first would fail its next tick on a release not found, and the second
// would let a second rollback pull request open beside the reopened one.
// Both lists are short: rollouts_unfinished indexes the rollouts not done.
const inUseCondition = `(release_id IN (SELECT release_id FROM rollouts WHERE phase <> 'done')
	OR (kind = '` + string(KindRollback) + `' AND state = '` + string(StateAborted) + `' AND last_fact_at IS NULL
		AND merged_at IS NULL AND release_id IN (SELECT release_id FROM rollback_reopened)))`

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
		AND release_id IN (`+ids+`) AND NOT `+inUseCondition+` RETURNING release_id`, args...)
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
	for _, b := range belongings {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+b.table+` WHERE release_id IN (`+placeholders(1, len(gone))+`)`+b.only,
			gone...); err != nil {
			return 0, fmt.Errorf("delete %s of deleted releases: %w", b.what, err)
		}
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

// belongings are the tables, besides facts, whose rows belong to one
// release and mean nothing without it. None has a foreign key to records
// (on SQLite a cascade would need the table rebuilt), so Sweep deletes
// their rows with their release, and deleteLeftBehind the rows of
// releases swept before they went with them. (deployments has a foreign
// key, ON DELETE CASCADE, and so do the batches, readings, approvals and
// audit lines of a rollout.) Facts are not among them: a fact may come
// before its release is stored (records.Apply keeps it), so one with no
// release is not left behind.
var belongings = []struct {
	table string
	what  string // in errors
	only  string // more conditions, ANDed: a row that does not meet them stays
}{
	// The note a release's check run shows (app/rollbackflow): outliving
	// its release it would be shown again on the check run of a release
	// opened later under the same id.
	{"release_check_notes", "check run notes", ""},
	// A withdrawn rollback's hold on its environment after its pull
	// request was reopened (app/rollbackflow/claim.go): without its
	// record it holds nothing, and a release opened later under the same
	// id would hold the environment without its pull request reopened.
	{"rollback_reopened", "reopened rollback holds", ""},
	// A release's rollout in waves (app/rolloutflow), once it is done: a
	// release opened later under the same id would be given it instead of
	// a rollout of its own. The sweep keeps a release whose rollout is not
	// done (inUseCondition); the phase is checked here too for rollouts
	// whose release went before that rule, which go once they end.
	{"rollouts", "finished rollouts", " AND phase = 'done'"},
}

// deleteLeftBehind deletes the rows of belongings whose release is gone:
// swept before its rows went with it (or, a rollout, swept while the
// rollout still ran, before inUseCondition kept such releases).
// They are looked for on the read pool, through each table's index of
// release_id (a table's every row: 20,000 rollouts at a year, whose rows
// are long), and only those found are deleted, checked again, in
// transactions of sweepBatch: looked for in the deleting transaction,
// they held SQLite's one writer for a tenth of a second or more each
// hour.
func (s *Store) deleteLeftBehind(ctx context.Context) error {
	for _, b := range belongings {
		gone := `NOT EXISTS (SELECT 1 FROM records WHERE records.release_id = ` + b.table + `.release_id)`
		ids, err := s.releaseIDs(ctx, `SELECT release_id FROM `+b.table+` WHERE `+gone)
		if err != nil {
			return fmt.Errorf("find the %s of releases gone: %w", b.what, err)
		}
		for start := 0; start < len(ids); start += sweepBatch {
			var batch []any
			for _, id := range ids[start:min(start+sweepBatch, len(ids))] {
				batch = append(batch, id)
			}
			err := s.db.InTx(ctx, func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, `DELETE FROM `+b.table+` WHERE release_id IN (`+placeholders(1, len(batch))+`)
					AND `+gone+b.only, batch...)
				return err
			})
			if err != nil {
				return fmt.Errorf("delete the %s of releases gone: %w", b.what, err)
			}
		}
	}
	return nil
}
