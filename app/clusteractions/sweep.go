package clusteractions

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/internal/store"
)

// The sweep of cluster actions nobody polls for. An agent's poll expires its
// cluster's actions (claim), but a cluster whose agent is down, which is when
// its rollback is needed most, sends no poll: its pending action would stay
// pending, its episode rolling back with no alert, and its rollback release
// opened. The sweep runs the same expiry for such clusters.
const (
	// SweepInterval is how often the sweep runs: an action ends at most
	// this long after ClaimTimeout (or claimGrace after a server start).
	SweepInterval = 5 * time.Minute
	// sweepTimeout bounds one sweep; each cluster is its own transaction.
	sweepTimeout = 2 * time.Minute
)

// ExpirySweepArgs expires the actions of every cluster that has one due.
type ExpirySweepArgs struct{}

// Kind names the job in the queue.
func (ExpirySweepArgs) Kind() string { return "cluster_actions_expiry_sweep" }

// sweepUnique keeps one sweep queued or running at a time, whichever server
// (the leader after a change of leader, a restart with RunOnStart) inserts
// it; a completed sweep does not hold back the next one.
var sweepUnique = river.UniqueOpts{ByState: []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
	rivertype.JobStateRunning, rivertype.JobStateRetryable, rivertype.JobStateScheduled}}

// SweepJob is the periodic job of the sweep, for the server's River client.
func SweepJob() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(SweepInterval),
		func() (river.JobArgs, *river.InsertOpts) {
			return ExpirySweepArgs{}, &river.InsertOpts{UniqueOpts: sweepUnique}
		},
		&river.PeriodicJobOpts{RunOnStart: true})
}

type expirySweepWorker struct {
	river.WorkerDefaults[ExpirySweepArgs]
	store *actionStore
	now   func() time.Time
}

func (w *expirySweepWorker) Timeout(*river.Job[ExpirySweepArgs]) time.Duration { return sweepTimeout }

// Work expires each due cluster's actions in a transaction of its own, as a
// poll of that cluster would: expire locks them in the order a poll does,
// and ends only actions still as it read them, so a sweep racing a poll, a
// second server's sweep or this job retried ends none twice. One cluster's
// failure does not hold back the others.
func (w *expirySweepWorker) Work(ctx context.Context, _ *river.Job[ExpirySweepArgs]) error {
	now := w.now()
	clusters, err := w.store.dueClusters(ctx, now)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range clusters {
		if err := w.store.db.InTx(ctx, func(tx *sql.Tx) error { return w.store.expire(ctx, tx, c, now) }); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// dueClusters lists the clusters with an action expire would end at now:
// pending since before notClaimedBefore, or claimed before expireBefore
// (none during claimGrace).
func (s *actionStore) dueClusters(ctx context.Context, now time.Time) ([]string, error) {
	cutoff, expiring := s.expireBefore(now)
	if !expiring {
		cutoff = time.Time{} // no claim is older than that
	}
	rows, err := s.db.Read.QueryContext(ctx, `SELECT DISTINCT cluster FROM cluster_actions
		WHERE `+openOnly+` AND ((state = 'pending' AND created_at < $1) OR (state = 'claimed' AND claimed_at < $2)) ORDER BY cluster`,
		store.Micros(notClaimedBefore(now)), store.Micros(cutoff))
	if err != nil {
		return nil, fmt.Errorf("clusters with actions to expire: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, fmt.Errorf("clusters with actions to expire: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
