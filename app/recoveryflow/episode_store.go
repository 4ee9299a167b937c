package recoveryflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ripcord/ripcord/internal/store"
)

// errStale: the episode changed between the read a decision rested on and
// its write. The write is dropped; the caller decides again on fresh state.
var errStale = errors.New("the recovery episode changed meanwhile")

// querier is what reads run on: the read pool or a transaction.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

const episodeColumns = `repository, run_id, installation_id, workflow, head_sha, app, environment, cluster,
	release_id, run_attempt, retry_count, state, decision, context, check_run_id, next_retry_at,
	rollback_run_id, rollback_release_id, seq, created_at, updated_at`

// RunKey names a workflow run in idempotency keys and, when its release is
// unknown, in audit events.
func RunKey(repository string, runID int64) string {
	return fmt.Sprintf("run:%s#%d", repository, runID)
}

// getEpisode reads the episode of a run; ok is false when there is none.
func getEpisode(ctx context.Context, q querier, repository string, runID int64) (Episode, bool, error) {
	return scanEpisode(q.QueryRowContext(ctx, `SELECT `+episodeColumns+` FROM episodes WHERE repository = $1 AND run_id = $2`,
		repository, runID))
}

// episodeByRollbackRelease finds the episode whose rollback opened release
// releaseID (modes pull-request and kubernetes).
func episodeByRollbackRelease(ctx context.Context, q querier, releaseID string) (Episode, bool, error) {
	return scanEpisode(q.QueryRowContext(ctx, `SELECT `+episodeColumns+` FROM episodes
		WHERE rollback_release_id = $1 AND rollback_release_id <> ''`, releaseID))
}

// episodeByRollbackRun finds the episode whose rollback started run runID.
func episodeByRollbackRun(ctx context.Context, q querier, repository string, runID int64) (Episode, bool, error) {
	return scanEpisode(q.QueryRowContext(ctx, `SELECT `+episodeColumns+` FROM episodes
		WHERE repository = $1 AND rollback_run_id = $2 AND rollback_run_id <> 0`, repository, runID))
}

func scanEpisode(row *sql.Row) (Episode, bool, error) {
	var e Episode
	var state string
	var decision, ctxJSON []byte
	var next *int64
	var created, updated int64
	err := row.Scan(&e.Repository, &e.RunID, &e.InstallationID, &e.Workflow, &e.HeadSHA, &e.App, &e.Environment,
		&e.Cluster, &e.ReleaseID, &e.RunAttempt, &e.RetryCount, &state, &decision, &ctxJSON, &e.CheckRunID, &next,
		&e.RollbackRunID, &e.RollbackReleaseID, &e.Seq, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return Episode{}, false, nil
	}
	if err != nil {
		return Episode{}, false, fmt.Errorf("read recovery episode: %w", err)
	}
	e.State, e.NextRetryAt = State(state), store.TimePtr(next)
	e.CreatedAt, e.UpdatedAt = store.Time(created), store.Time(updated)
	if err := json.Unmarshal(decision, &e.Decision); err != nil {
		return Episode{}, false, fmt.Errorf("episode %s#%d: decision: %w", e.Repository, e.RunID, err)
	}
	if err := json.Unmarshal(ctxJSON, &e.Context); err != nil {
		return Episode{}, false, fmt.Errorf("episode %s#%d: context: %w", e.Repository, e.RunID, err)
	}
	return e, true, nil
}

// saveEpisode writes e over the version whose Seq was prevSeq (0: none yet).
// It returns errStale when another write came first.
func saveEpisode(ctx context.Context, tx *sql.Tx, e Episode, prevSeq int) error {
	decision, err := json.Marshal(e.Decision)
	if err != nil {
		return fmt.Errorf("episode %s#%d: decision: %w", e.Repository, e.RunID, err)
	}
	ctxJSON, err := json.Marshal(e.Context)
	if err != nil {
		return fmt.Errorf("episode %s#%d: context: %w", e.Repository, e.RunID, err)
	}
	args := []any{e.Repository, e.RunID, e.InstallationID, e.Workflow, e.HeadSHA, e.App, e.Environment, e.Cluster,
		e.ReleaseID, e.RunAttempt, e.RetryCount, string(e.State), string(decision), string(ctxJSON),
		store.NullMicros(e.NextRetryAt), e.RollbackRunID, e.Seq, store.Micros(e.CreatedAt), store.Micros(e.UpdatedAt),
		e.RollbackReleaseID}
	var res sql.Result
	if prevSeq == 0 {
		res, err = tx.ExecContext(ctx, `INSERT INTO episodes (repository, run_id, installation_id, workflow, head_sha, app,
			environment, cluster, release_id, run_attempt, retry_count, state, decision, context, next_retry_at,
			rollback_run_id, seq, created_at, updated_at, rollback_release_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
			ON CONFLICT (repository, run_id) DO NOTHING`, args...)
	} else {
		res, err = tx.ExecContext(ctx, `UPDATE episodes SET installation_id = $3, workflow = $4, head_sha = $5, app = $6,
			environment = $7, cluster = $8, release_id = $9, run_attempt = $10, retry_count = $11, state = $12,
			decision = $13, context = $14, next_retry_at = $15, rollback_run_id = $16, seq = $17, created_at = $18,
			updated_at = $19, rollback_release_id = $20 WHERE repository = $1 AND run_id = $2 AND seq = $21`, append(args, prevSeq)...)
	}
	if err != nil {
		return fmt.Errorf("save recovery episode %s#%d: %w", e.Repository, e.RunID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return errStale
	}
	return nil
}
