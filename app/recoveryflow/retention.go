package recoveryflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/internal/store"
)

// Recovery adds rows to three tables for every failed deploy run it
// decides, and a busy repository re-runs workflows every day: episodes,
// rollback_dispatches and recovery_issues. RetentionSweepArgs deletes,
// hourly, the rows nothing will read again, in rounds of retentionChunk
// (store.DB.InRounds) so that SQLite's one writer is never held for long.
// Audit events stay (they are the history, and the records sweep keeps
// them too); so do the check runs and issues on GitHub.
//
// An episode goes when it is finished (rolled_back, skipped, alerted,
// recovered, stopped) and its last change is older than the server's
// retention, and older than rerunHorizon whatever the retention:
//
//   - An episode in progress (retry_scheduled, retrying, rolling_back) is
//     kept whatever its age: a job or a webhook still moves it on.
//   - A finished episode is not final: a later failed attempt of its run
//     (a person re-ran it) is decided with the episode's retry count, a
//     redelivered failure is refused because the episode handled that
//     attempt already, and the run of its workflow rollback (also a run
//     of a deploy workflow) is known as ripcord's rollback, not a deploy
//     to retry or roll back in turn. GitHub re-runs a run up to 30 days
//     after it started and redelivers a delivery of the past 3 days, so
//     after rerunHorizon no event of GitHub's needs the episode any more.
//     (A delivery GitHub sends again keeps its id, and deliveries keep
//     theirs for deliveries.retention; the episode is the guard that
//     outlives that, and once it is deleted a failure posted again is
//     ignored by its age: replay.go.)
//   - An episode a recovery job will still read is kept: its check run,
//     alert issue, re-run or rollback dispatch (by the run's id, whatever
//     the repository: keeping one too many is harmless), or the outcome of
//     its rollback release. Such a job, retried, must find the episode,
//     or the check run would never show the end and the issue never open.
//
// Nothing else reads episodes: no API, the web UI or app/rolloutflow
// (access.go only says "episode" in a comment).
//
// A rollback dispatch goes with its episode, in the same transaction: the
// dispatch is no older than the episode's last change (the dispatch
// writes it), so the dispatch too is past rerunHorizon, beyond any re-run
// of its rollback run.
//
// An alert issue's row (recovery_issues, one per alert key: the failed
// release, or the run when that is unknown) goes once it is older than
// the retention cutoff and no episode has its key any more: then no alert
// can update or reopen its issue, as the alert job reads its episode
// first. A failure of that release coming after it opens a new issue.
// Whether the issue is still open on GitHub does not matter: ripcord
// never closes one, a person does.

// RetentionInterval is how often the retention sweep runs.
const RetentionInterval = time.Hour

// rerunHorizon is the least time a finished episode is kept after its last
// change: GitHub re-runs a run up to 30 days after it started and
// redelivers deliveries of the past 3 days; 2 days more let a last
// attempt started on day 30 end.
const rerunHorizon = 35 * 24 * time.Hour

// retentionChunk bounds the rows one round of the sweep deletes.
const retentionChunk = 500

// finishedStates are the states an episode may be deleted in, as SQL.
var finishedStates = "'" + strings.Join([]string{string(StateRolledBack), string(StateSkipped), string(StateAlerted),
	string(StateRecovered), string(StateStopped)}, "', '") + "'"

// RetentionSweepArgs deletes recovery's rows past their retention.
type RetentionSweepArgs struct{}

// Kind names the job in the queue.
func (RetentionSweepArgs) Kind() string { return "recovery_retention_sweep" }

// RetentionJob is the periodic job of the retention sweep, for the
// server's River client: one queued or running at a time, as the re-run
// sweep (sweepUnique).
func RetentionJob() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(RetentionInterval),
		func() (river.JobArgs, *river.InsertOpts) {
			return RetentionSweepArgs{}, &river.InsertOpts{UniqueOpts: sweepUnique}
		},
		&river.PeriodicJobOpts{RunOnStart: true})
}

type retentionSweepWorker struct {
	river.WorkerDefaults[RetentionSweepArgs]
	f *flow
}

func (w *retentionSweepWorker) Timeout(*river.Job[RetentionSweepArgs]) time.Duration {
	return jobTimeout
}

// Work deletes the finished episodes past retention with their dispatches,
// then the alert issue rows no episode holds. A sweep cut short by its
// timeout keeps the rounds it committed; the next one goes on.
func (w *retentionSweepWorker) Work(ctx context.Context, _ *river.Job[RetentionSweepArgs]) error {
	f := w.f
	keep := f.retention()
	cutoff := f.deps.Now().Add(-keep)
	episodes, err := sweepEpisodes(ctx, f.deps.DB, cutoff)
	if err != nil {
		return err
	}
	issues, err := sweepIssueRows(ctx, f.deps.DB, cutoff)
	if err != nil {
		return err
	}
	if episodes+issues > 0 {
		f.deps.Log.Info("swept finished recovery episodes past retention", "episodes", episodes, "alert_issue_rows", issues, "kept_for", keep)
	}
	return nil
}

// retention is how long a finished episode is kept after its last change:
// the server's retention, and rerunHorizon at least.
func (f *flow) retention() time.Duration {
	if c := f.deps.Config; c != nil && c.Retention > rerunHorizon {
		return c.Retention
	}
	return rerunHorizon
}

// sweepEpisodes deletes the finished episodes last changed before cutoff
// that no live job reads, and their rollback dispatches, in rounds; it
// returns how many episodes it deleted.
func sweepEpisodes(ctx context.Context, db *store.DB, cutoff time.Time) (int, error) {
	q := sweepEpisodesSQL(db.Dialect)
	n, err := db.InRounds(ctx, retentionChunk, func(tx *sql.Tx) (int, error) {
		return sweepEpisodesRound(ctx, tx, q, cutoff)
	})
	if err != nil {
		return n, fmt.Errorf("sweep recovery episodes: %w", err)
	}
	return n, nil
}

// sweepEpisodesRound is one round of sweepEpisodes, in tx: it deletes
// retentionChunk episodes at most, with q (sweepEpisodesSQL), and their
// rollback dispatches.
func sweepEpisodesRound(ctx context.Context, tx *sql.Tx, q string, cutoff time.Time) (int, error) {
	type key struct {
		repository string
		runID      int64
	}
	rows, err := tx.QueryContext(ctx, q, store.Micros(cutoff), retentionChunk)
	if err != nil {
		return 0, err
	}
	var gone []key
	for rows.Next() {
		var k key
		if err := rows.Scan(&k.repository, &k.runID); err != nil {
			rows.Close()
			return 0, err
		}
		gone = append(gone, k)
	}
	// An error met while reading must fail the round: the episodes not read
	// would lose their episode but keep their rollback dispatches.
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, err
	}
	for _, k := range gone {
		if _, err := tx.ExecContext(ctx, `DELETE FROM rollback_dispatches WHERE episode_repository = $1 AND episode_run_id = $2`,
			k.repository, k.runID); err != nil {
			return 0, fmt.Errorf("delete the rollback dispatches of %s: %w", RunKey(k.repository, k.runID), err)
		}
	}
	return len(gone), nil
}

// sweepEpisodesSQL deletes the oldest finished episodes last changed
// before $1, $2 at most, but those a live job reads (see above), and
// returns their keys. It reads them along episodes_updated (00034).
func sweepEpisodesSQL(dialect store.Dialect) string {
	runArg := `CAST(` + store.RiverJobArg(dialect, "run_id") + ` AS BIGINT)`
	releaseArg := store.RiverJobArg(dialect, "release_id")
	byRun := "'" + strings.Join([]string{CheckArgs{}.Kind(), AlertArgs{}.Kind(), kindRerun, kindDispatch}, "', '") + "'"
	return `DELETE FROM episodes WHERE (repository, run_id) IN (SELECT repository, run_id FROM episodes
		WHERE updated_at < $1 AND state IN (` + finishedStates + `)
		AND run_id NOT IN (SELECT ` + runArg + ` FROM river_job WHERE kind IN (` + byRun + `)
			AND state IN (` + store.RiverLiveStates + `) AND ` + runArg + ` IS NOT NULL)
		AND rollback_release_id NOT IN (SELECT ` + releaseArg + ` FROM river_job WHERE kind = '` + RollbackOutcomeArgs{}.Kind() + `'
			AND state IN (` + store.RiverLiveStates + `) AND ` + releaseArg + ` IS NOT NULL)
		ORDER BY updated_at LIMIT $2)
		RETURNING repository, run_id`
}

// sweepIssueRows deletes the alert issue rows created before cutoff whose
// key no episode has, in rounds that walk the table in key order; it
// returns how many it deleted.
func sweepIssueRows(ctx context.Context, db *store.DB, cutoff time.Time) (int, error) {
	s := issueSweep{cutoff: cutoff}
	_, err := db.InRounds(ctx, retentionChunk, func(tx *sql.Tx) (int, error) { return s.round(ctx, tx) })
	if err != nil {
		return s.deleted, fmt.Errorf("sweep recovery alert issue rows: %w", err)
	}
	return s.deleted, nil
}

// issueSweep is where sweepIssueRows stands: the last key a round read,
// and the rows deleted so far.
type issueSweep struct {
	cutoff              time.Time
	afterRepo, afterKey string
	deleted             int
}

// round reads the next retentionChunk rows created before the cutoff, at
// most, and deletes those no episode holds; it returns how many it read.
func (s *issueSweep) round(ctx context.Context, tx *sql.Tx) (int, error) {
	rows, err := tx.QueryContext(ctx, `SELECT repository, alert_key FROM recovery_issues
		WHERE created_at < $1 AND (repository > $2 OR (repository = $2 AND alert_key > $3))
		ORDER BY repository, alert_key LIMIT $4`, store.Micros(s.cutoff), s.afterRepo, s.afterKey, retentionChunk)
	if err != nil {
		return 0, err
	}
	var page [][2]string
	for rows.Next() {
		var r [2]string
		if err := rows.Scan(&r[0], &r[1]); err != nil {
			rows.Close()
			return 0, err
		}
		page = append(page, r)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, err
	}
	n := 0
	for _, r := range page {
		held, err := alertKeyHeld(ctx, tx, r[0], r[1])
		if err != nil {
			return 0, err
		}
		if held {
			continue
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM recovery_issues WHERE repository = $1 AND alert_key = $2`, r[0], r[1]); err != nil {
			return 0, fmt.Errorf("delete the alert issue row of %s in %s: %w", r[1], r[0], err)
		}
		n++
	}
	if len(page) > 0 {
		s.afterRepo, s.afterKey = page[len(page)-1][0], page[len(page)-1][1]
	}
	s.deleted += n // for the log: a round that fails to commit is counted all the same
	return len(page), nil
}

// alertKeyHeld reports whether an episode of repository has alert key key:
// the episode of the run a run key names (whatever its release now: a
// later attempt without a task fact alerts under the run key again), or an
// episode of the release (along episodes_release, 00034).
func alertKeyHeld(ctx context.Context, tx *sql.Tx, repository, key string) (bool, error) {
	q, args := `SELECT EXISTS (SELECT 1 FROM episodes WHERE repository = $1 AND release_id = $2 AND release_id <> '')`, []any{repository, key}
	if id, ok := runOfKey(repository, key); ok {
		q, args = `SELECT EXISTS (SELECT 1 FROM episodes WHERE repository = $1 AND run_id = $2)`, []any{repository, id}
	}
	var held bool
	if err := tx.QueryRowContext(ctx, q, args...).Scan(&held); err != nil {
		return false, fmt.Errorf("is alert key %s of %s held: %w", key, repository, err)
	}
	return held, nil
}

// runOfKey is the run whose RunKey key is, if it is one.
func runOfKey(repository, key string) (int64, bool) {
	rest, ok := strings.CutPrefix(key, strings.TrimSuffix(RunKey(repository, 0), "0"))
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	return id, err == nil && RunKey(repository, id) == key
}
