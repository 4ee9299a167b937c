package deployments

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/records"
)

// SyncArgs brings one release's GitHub deployment in step with its record.
// Version is the record's updated_at when the job was queued: River drops
// an exact repeat, and a job whose version is no longer the record's leaves
// the work to the newer one.
type SyncArgs struct {
	ReleaseID string `json:"release_id" river:"unique"`
	Version   int64  `json:"version" river:"unique"`
}

// Kind names the job in the queue.
func (SyncArgs) Kind() string { return "deployment_sync" }

const syncAttempts = 25

// Queue queues the deployment sync of every record a transaction changed,
// in that transaction: call it wherever records are opened or facts
// applied, next to the CDEvent effects and release checks. A record that
// cannot have a deployment (no repository, no commit) gets its reason
// written instead, once, and no job.
func Queue(ctx context.Context, tx *sql.Tx, rc *river.Client[*sql.Tx], log *slog.Logger, recs []records.Record) error {
	var jobs []river.InsertManyParams
	for _, r := range recs {
		if reason := SkipReason(r); reason != "" {
			if err := noteSkipped(ctx, tx, log, r, reason); err != nil {
				return err
			}
			continue
		}
		jobs = append(jobs, river.InsertManyParams{Args: SyncArgs{ReleaseID: r.ReleaseID, Version: r.UpdatedAt.UnixMicro()},
			InsertOpts: &river.InsertOpts{MaxAttempts: syncAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true}}})
	}
	if len(jobs) == 0 {
		return nil
	}
	if _, err := rc.InsertManyTx(ctx, tx, jobs); err != nil {
		return fmt.Errorf("queue %d deployment syncs: %w", len(jobs), err)
	}
	return nil
}

// noteSkipped writes why r gets no deployment the first time it is seen,
// and logs it then only. A record's repository and revision never change,
// so neither does the reason.
func noteSkipped(ctx context.Context, tx *sql.Tx, log *slog.Logger, r records.Record, reason string) error {
	res, err := tx.ExecContext(ctx, `INSERT INTO deployments (release_id, repository, skipped, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (release_id) DO NOTHING`, r.ReleaseID, r.Repository, reason, store.Micros(r.UpdatedAt))
	if err != nil {
		return fmt.Errorf("note why %s has no deployment: %w", r.ReleaseID, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 1 && log != nil {
		log.Info("no GitHub deployment for this release", "release_id", r.ReleaseID, "reason", reason)
	}
	return nil
}
