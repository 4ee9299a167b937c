package rolloutflow

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/records"
)

// A rollout that ends succeeded reports its release healthy: every batch
// was deployed and every health gate between the waves passed (seed 001's
// verification), so the rollout is the source that saw the release
// healthy, whether or not the deploy workflow posts facts with the bundled
// action. The report is a task fact, applied through the server's own fact
// path (pipeline.Deps' ApplyFacts, the group commit of POST
// /api/v1/facts), so that everything a healthy release sets off follows:
// GitHub deployment statuses, CDEvents, the rolled-back marking of what a
// rollback takes back, the end of a recovery episode.
//
// The fact's id is the one the deploy workflow's own success for the
// rollout's last deploy run has (repository, run, attempt 1, success,
// release): the job run twice, or the workflow having posted it already,
// changes nothing. A rollout that ends failed reports nothing: what that
// means for its release is not decided.

// HealthyArgs reports the release of a rollout that succeeded healthy. It
// is queued in the transaction that stores the rollout's end.
type HealthyArgs struct {
	RolloutID string `json:"rollout_id" river:"unique"`
	// EndedAt is when the rollout ended: the fact's observed_at, so that
	// a fact observed later about the release wins over it.
	EndedAt time.Time `json:"ended_at"`
}

// Kind names the job in the queue.
func (HealthyArgs) Kind() string { return "rollout_healthy" }

const healthyAttempts = 25

func queueHealthy(ctx context.Context, tx *sql.Tx, rc *river.Client[*sql.Tx], id string, ended time.Time) error {
	_, err := rc.InsertTx(ctx, tx, HealthyArgs{RolloutID: id, EndedAt: ended},
		&river.InsertOpts{MaxAttempts: healthyAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true}})
	if err != nil {
		return fmt.Errorf("queue the healthy report of rollout %s: %w", id, err)
	}
	return nil
}

type healthyWorker struct {
	river.WorkerDefaults[HealthyArgs]
	x *executor
}

func (w *healthyWorker) Work(ctx context.Context, job *river.Job[HealthyArgs]) error {
	return w.x.reportHealthy(ctx, job.Args)
}

// reportHealthy applies the fact that the rollout's release is healthy,
// when there is one to apply (healthyFact).
func (x *executor) reportHealthy(ctx context.Context, a HealthyArgs) error {
	f, ok, err := x.healthyFact(ctx, a)
	if err != nil || !ok {
		return err
	}
	if x.deps.ApplyFacts == nil {
		return river.JobCancel(errors.New("this server has no fact path to report a rollout's release healthy"))
	}
	if err := x.deps.ApplyFacts([]records.Fact{f}); err != nil {
		return fmt.Errorf("report release %s of rollout %s healthy: %w", f.ReleaseID, a.RolloutID, err)
	}
	return nil
}

// healthyFact is the task fact that says the release of rollout a.RolloutID
// is healthy. There is none to apply when the rollout did not succeed, the
// rollout or its record is gone (swept), the record is healthy already
// (the deploy workflow said so: nothing to add), or it is superseded or
// rolled back (a newer release took over; a fact about it now would be
// drift).
func (x *executor) healthyFact(ctx context.Context, a HealthyArgs) (records.Fact, bool, error) {
	r, err := getRollout(ctx, x.deps.DB.Read, a.RolloutID)
	if errors.Is(err, ErrNotFound) {
		return records.Fact{}, false, nil
	}
	if err != nil {
		return records.Fact{}, false, err
	}
	if r.Machine.Status != Succeeded || r.Machine.Phase != PhaseDone {
		return records.Fact{}, false, nil
	}
	rec, err := x.deps.Records.Get(ctx, r.ReleaseID)
	if errors.Is(err, records.ErrNotFound) {
		return records.Fact{}, false, nil
	}
	if err != nil {
		return records.Fact{}, false, fmt.Errorf("release %s of rollout %s: %w", r.ReleaseID, r.ID, err)
	}
	if rec.State == records.StateHealthy || rec.State.Final() {
		return records.Fact{}, false, nil
	}
	run, err := lastDeployRun(ctx, x.deps.DB.Read, r.ID)
	if err != nil {
		return records.Fact{}, false, err
	}
	f := records.Fact{Source: records.SourceTask, Repository: cmp.Or(rec.Repository, r.Repository), App: rec.App,
		Environment: rec.Environment, Cluster: rec.Cluster, ReleaseID: rec.ReleaseID, Version: rec.Image,
		Status: records.TaskSuccess, WorkflowRunID: run, RunAttempt: 1,
		ObservedAt: cmp.Or(a.EndedAt, r.UpdatedAt), Metadata: map[string]string{"rollout": r.ID}}
	if err := f.Validate(); err != nil {
		// No deploy run (a plan with no batch) or no repository: nothing
		// the reducer could take; retrying would not change it.
		x.deps.Log.Warn("a succeeded rollout cannot report its release healthy", "rollout", r.ID,
			"release_id", rec.ReleaseID, "err", err)
		return records.Fact{}, false, nil
	}
	return f, true, nil
}

// lastDeployRun is the run id of the rollout's last deploy batch that
// succeeded, in the order they were dispatched; 0 when there is none.
func lastDeployRun(ctx context.Context, q querier, id string) (int64, error) {
	var run int64
	err := q.QueryRowContext(ctx, `SELECT run_id FROM rollout_batches
		WHERE rollout_id = $1 AND kind = $2 AND state = $3 AND run_id <> 0 ORDER BY ord DESC LIMIT 1`,
		id, KindDeploy, RunSuccess).Scan(&run)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("last deploy run of rollout %s: %w", id, err)
	}
	return run, nil
}

// ended is when a rollout's end is stored: now, in microseconds as the
// store keeps times.
func ended(now time.Time) time.Time { return store.Time(store.Micros(now)) }
