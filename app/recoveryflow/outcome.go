package recoveryflow

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/records"
)

// Rollbacks of mode pull-request and kubernetes are releases: their record,
// fed by facts, says how they ended, not a workflow run. When a rollback
// release settles, RollbackOutcomeArgs ends the episode that opened it the
// way a workflow rollback's run ends its own (onSuccess, rollbackFailed):
// healthy is rolled_back with rollback_completed; failed, degraded,
// aborted, withdrawn (its pull request closed without merging) or stalled
// is rollback_failed and an alert for a human.

// Outcomes a rollback release reaches.
const (
	OutcomeHealthy = "healthy"
	OutcomeFailed  = "failed"
)

// RollbackOutcomeArgs is a rollback release that settled. One job per
// release and outcome: a resync repeating healthy is a duplicate.
type RollbackOutcomeArgs struct {
	ReleaseID string `json:"release_id" river:"unique"`
	Outcome   string `json:"outcome" river:"unique"`
	Why       string `json:"why"`
}

// Kind names the job in the queue.
func (RollbackOutcomeArgs) Kind() string { return "recovery_rollback_outcome" }

// outcomeOf is what a changed record says about the rollback it is, if
// anything: only a rollback release that settled counts.
func outcomeOf(r records.Record) (RollbackOutcomeArgs, bool) {
	if r.Kind != records.KindRollback {
		return RollbackOutcomeArgs{}, false
	}
	a := RollbackOutcomeArgs{ReleaseID: r.ReleaseID, Outcome: OutcomeFailed}
	switch {
	case r.State == records.StateHealthy:
		a.Outcome, a.Why = OutcomeHealthy, fmt.Sprintf("rollback release %s is healthy", r.ReleaseID)
	case r.Withdrawn():
		a.Why = fmt.Sprintf("the pull request of rollback release %s (%s) was closed without merging", r.ReleaseID, r.PRURL)
	case r.State == records.StateDegraded, r.State == records.StateAborted, r.State == records.StateFailed:
		a.Why = fmt.Sprintf("rollback release %s is %s", r.ReleaseID, r.State)
	default:
		return RollbackOutcomeArgs{}, false
	}
	return a, true
}

// QueueRollbackOutcomes queues, in the caller's transaction, the end of the
// recovery episodes whose rollback releases are among recs and settled.
// Records that are no rollback, or have not settled, queue nothing.
func QueueRollbackOutcomes(ctx context.Context, tx *sql.Tx, rc *river.Client[*sql.Tx], recs []records.Record) error {
	var jobs []river.InsertManyParams
	for _, r := range recs {
		if a, ok := outcomeOf(r); ok {
			jobs = append(jobs, river.InsertManyParams{Args: a, InsertOpts: outcomeOpts()})
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	if _, err := rc.InsertManyTx(ctx, tx, jobs); err != nil {
		return fmt.Errorf("queue %d rollback outcomes: %w", len(jobs), err)
	}
	return nil
}

// QueueRollbackFailed queues the end of the episode whose rollback release
// failed without a state to show it: it stalled (no fact came since it
// opened), or its pull request could not be opened. Any release may be
// passed: one that no episode rolled back with changes nothing.
func QueueRollbackFailed(ctx context.Context, tx *sql.Tx, rc *river.Client[*sql.Tx], releaseID, reason string) error {
	_, err := rc.InsertTx(ctx, tx, RollbackOutcomeArgs{ReleaseID: releaseID, Outcome: OutcomeFailed, Why: reason}, outcomeOpts())
	if err != nil {
		return fmt.Errorf("queue rollback outcome of %s: %w", releaseID, err)
	}
	return nil
}

func outcomeOpts() *river.InsertOpts {
	return &river.InsertOpts{MaxAttempts: jobAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

type outcomeWorker struct {
	river.WorkerDefaults[RollbackOutcomeArgs]
	f *flow
}

func (w *outcomeWorker) Timeout(*river.Job[RollbackOutcomeArgs]) time.Duration { return jobTimeout }

func (w *outcomeWorker) Work(ctx context.Context, job *river.Job[RollbackOutcomeArgs]) error {
	a, f := job.Args, w.f
	return f.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		ep, ok, err := episodeByRollbackRelease(ctx, tx, a.ReleaseID)
		if err != nil || !ok {
			return err
		}
		if a.Outcome != OutcomeHealthy {
			return f.rollbackFailed(ctx, tx, ep, a.Why, "")
		}
		now := f.deps.Now()
		next, ok := ep.RolledBack(now)
		if !ok {
			return nil // ended already
		}
		if err := saveEpisode(ctx, tx, next, ep.Seq); err != nil {
			return err // stale: retried on fresh state
		}
		ev := auditEvent(next, records.AuditRollbackCompleted, "", now, fmt.Sprintf(
			"Rollback release %s is healthy: %s is back on %s.", a.ReleaseID, where(next.Environment, next.Cluster), targetName(next.Decision.Target)))
		if err := f.deps.Records.InsertAudit(ctx, tx, ev); err != nil {
			return err
		}
		return f.queueCheck(ctx, tx, next)
	})
}
