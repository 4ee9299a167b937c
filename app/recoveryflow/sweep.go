package recoveryflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/recovery"
)

// The sweep of scheduled retries that no job will carry out any more: the
// re-run job's last attempt found the database unreachable (it could
// neither re-run nor record an alert), or it ended without moving the
// episode on (it left a later failed attempt to a webhook that never came).
const (
	// SweepInterval is how often the sweep runs.
	SweepInterval = 5 * time.Minute
	// rerunOverdue is how long past its time a scheduled retry waits
	// before the sweep looks at it: a due job may wait for a free worker.
	rerunOverdue = 15 * time.Minute
	// rerunRequeueLimit bounds re-queuing: a retry this late is
	// alerted, as the failure it was for is a day old.
	rerunRequeueLimit = 24 * time.Hour
	// sweepBatch bounds the episodes one sweep reads.
	sweepBatch = 500
)

// RuleRerunLost names the alert decided when a scheduled retry was not
// carried out and will not be.
const RuleRerunLost = "alert-rerun-lost"

// errTooLate undoes the re-queue of a retry past rerunRequeueLimit.
var errTooLate = errors.New("the retry is too late to re-queue")

// RerunSweepArgs looks for episodes in retry_scheduled well past their
// retry with no re-run job left for them.
type RerunSweepArgs struct{}

// Kind names the job in the queue.
func (RerunSweepArgs) Kind() string { return "recovery_rerun_sweep" }

// sweepUnique keeps one sweep queued or running at a time: a sweep slower
// than SweepInterval, or a second server's sweep inserted on its start
// (RunOnStart) or after a change of leader, would otherwise stack copies
// that read the same episodes. A completed sweep does not hold back the next.
var sweepUnique = river.UniqueOpts{ByState: []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
	rivertype.JobStateRunning, rivertype.JobStateRetryable, rivertype.JobStateScheduled}}

// SweepJob is the periodic job of the sweep, for the server's River client.
func SweepJob() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(SweepInterval),
		func() (river.JobArgs, *river.InsertOpts) {
			return RerunSweepArgs{}, &river.InsertOpts{UniqueOpts: sweepUnique}
		},
		&river.PeriodicJobOpts{RunOnStart: true})
}

type rerunSweepWorker struct {
	river.WorkerDefaults[RerunSweepArgs]
	f *flow
}

func (w *rerunSweepWorker) Timeout(*river.Job[RerunSweepArgs]) time.Duration { return jobTimeout }

// Work queues the re-run again for each overdue episode: River refuses a
// second job for the same retry while one is alive (or completed), and
// the re-run job does nothing unless the episode still waits for that
// retry, so a sweep racing a live job never re-runs twice. A retry whose
// job completed without carrying it out, or one overdue past
// rerunRequeueLimit, becomes an alert.
func (w *rerunSweepWorker) Work(ctx context.Context, job *river.Job[RerunSweepArgs]) error {
	f := w.f
	now := f.deps.Now()
	overdue, err := overdueRetries(ctx, f.deps.DB.Read, now.Add(-rerunOverdue))
	if err != nil {
		return err
	}
	for _, ep := range overdue {
		if err := f.sweepRetry(ctx, ep, now); err != nil {
			return err
		}
	}
	return nil
}

// overdueRetries reads the episodes whose retry was due before cutoff.
func overdueRetries(ctx context.Context, db *sql.DB, cutoff time.Time) ([]Episode, error) {
	rows, err := db.QueryContext(ctx, `SELECT repository, run_id FROM episodes
		WHERE state = $1 AND next_retry_at < $2 ORDER BY next_retry_at LIMIT $3`,
		string(StateRetryScheduled), store.Micros(cutoff), sweepBatch)
	if err != nil {
		return nil, fmt.Errorf("overdue retries: %w", err)
	}
	type key struct {
		repository string
		runID      int64
	}
	var keys []key
	for rows.Next() {
		var k key
		if err := rows.Scan(&k.repository, &k.runID); err != nil {
			rows.Close()
			return nil, fmt.Errorf("overdue retries: %w", err)
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("overdue retries: %w", err)
	}
	var out []Episode
	for _, k := range keys {
		ep, ok, err := getEpisode(ctx, db, k.repository, k.runID)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, ep)
		}
	}
	return out, nil
}

// sweepRetry re-queues the overdue retry of ep, or alerts.
func (f *flow) sweepRetry(ctx context.Context, ep Episode, now time.Time) error {
	if ep.State != StateRetryScheduled || ep.NextRetryAt == nil {
		return nil
	}
	late := now.Sub(*ep.NextRetryAt)
	args := RerunArgs{Repository: ep.Repository, RunID: ep.RunID, Attempt: ep.RunAttempt, InstallationID: ep.InstallationID}
	var res *rivertype.JobInsertResult
	err := f.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		var err error
		res, err = f.deps.River().InsertTx(ctx, tx, args, &river.InsertOpts{MaxAttempts: jobAttempts,
			UniqueOpts: river.UniqueOpts{ByArgs: true}})
		if err == nil && !res.UniqueSkippedAsDuplicate && late > rerunRequeueLimit {
			return errTooLate // no job is left; too late to re-run: undo the insert
		}
		return err
	})
	var why string
	switch {
	case errors.Is(err, errTooLate):
		why = fmt.Sprintf("no re-run happened for %s", late.Round(time.Minute))
	case err != nil:
		return fmt.Errorf("queue the overdue retry of %s#%d again: %w", ep.Repository, ep.RunID, err)
	case !res.UniqueSkippedAsDuplicate:
		f.metrics.effects.WithLabelValues("rerun", "requeued").Inc()
		f.deps.Log.Warn("overdue retry queued again: its re-run job ended without carrying it out", "repository", ep.Repository,
			"run_id", ep.RunID, "attempt", ep.RunAttempt, "due", stamp(*ep.NextRetryAt))
		return nil
	case res.Job.State != rivertype.JobStateCompleted:
		return nil // alive: that job carries the retry out
	default:
		why = fmt.Sprintf("its re-run job ended at %s without re-running", stamp(derefTime(res.Job.FinalizedAt, now)))
	}
	f.metrics.effects.WithLabelValues("rerun", "lost").Inc()
	d := recovery.Decision{
		Action: recovery.ActionAlert, Rule: RuleRerunLost,
		Reason: fmt.Sprintf("Retry %d of run %d was due at %s and did not happen (%s); a human has to decide.",
			ep.Decision.Attempt, ep.RunID, stamp(*ep.NextRetryAt), why),
		Attempt: ep.Decision.Attempt, MaxAttempts: ep.Decision.MaxAttempts,
		AuditEvents: []string{recovery.EventManualInterventionRequired},
	}
	in := ep.Context.Input
	in.Now = now
	return f.redecide(ctx, ep, d, in)
}

func derefTime(t *time.Time, or time.Time) time.Time {
	if t == nil {
		return or
	}
	return *t
}
