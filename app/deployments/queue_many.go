package deployments

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/records"
)

// QueueMany is Queue for the records that many requests committed together
// changed (the fact intake's group commit): one job insert and at most one
// statement for the reasons of the records that get no deployment, where
// Queue spends a statement per such record. A record listed twice with the
// same updated_at is one job (River refuses two equal unique jobs in one
// insert); a reason is written from a record's first listing, as Queue
// called request by request would.
func QueueMany(ctx context.Context, tx *sql.Tx, rc *river.Client[*sql.Tx], log *slog.Logger, recs []records.Record) error {
	var jobs []river.InsertManyParams
	var skipped []records.Record
	var reasons []string
	queued, noted := map[SyncArgs]bool{}, map[string]bool{}
	for _, r := range recs {
		if reason := SkipReason(r); reason != "" {
			if !noted[r.ReleaseID] {
				noted[r.ReleaseID] = true
				skipped, reasons = append(skipped, r), append(reasons, reason)
			}
			continue
		}
		args := SyncArgs{ReleaseID: r.ReleaseID, Version: r.UpdatedAt.UnixMicro()}
		if queued[args] {
			continue
		}
		queued[args] = true
		jobs = append(jobs, river.InsertManyParams{Args: args,
			InsertOpts: &river.InsertOpts{MaxAttempts: syncAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true}}})
	}
	if err := noteSkippedMany(ctx, tx, log, skipped, reasons); err != nil {
		return err
	}
	if len(jobs) == 0 {
		return nil
	}
	if _, err := rc.InsertManyTx(ctx, tx, jobs); err != nil {
		return fmt.Errorf("queue %d deployment syncs: %w", len(jobs), err)
	}
	return nil
}

// noteSkippedMany is noteSkipped for several records at once, each
// listed once: the rows it inserts are the records seen for the first
// time, and only those are logged.
func noteSkippedMany(ctx context.Context, tx *sql.Tx, log *slog.Logger, recs []records.Record, reasons []string) error {
	if len(recs) == 0 {
		return nil
	}
	rows := make([]string, len(recs))
	args := make([]any, 0, 4*len(recs))
	for i, r := range recs {
		rows[i] = fmt.Sprintf("($%d, $%d, $%d, $%d)", 4*i+1, 4*i+2, 4*i+3, 4*i+4)
		args = append(args, r.ReleaseID, r.Repository, reasons[i], store.Micros(r.UpdatedAt))
	}
	res, err := tx.QueryContext(ctx, `INSERT INTO deployments (release_id, repository, skipped, updated_at) VALUES `+
		strings.Join(rows, ", ")+` ON CONFLICT (release_id) DO NOTHING RETURNING release_id, skipped`, args...)
	if err != nil {
		return fmt.Errorf("note why %d releases have no deployment: %w", len(recs), err)
	}
	defer res.Close()
	for res.Next() {
		var id, reason string
		if err := res.Scan(&id, &reason); err != nil {
			return fmt.Errorf("note why %d releases have no deployment: %w", len(recs), err)
		}
		if log != nil {
			log.Info("no GitHub deployment for this release", "release_id", id, "reason", reason)
		}
	}
	if err := res.Err(); err != nil {
		return fmt.Errorf("note why %d releases have no deployment: %w", len(recs), err)
	}
	return nil
}
