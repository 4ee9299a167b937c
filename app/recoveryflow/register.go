package recoveryflow

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/app/pipeline"
)

// RollbackRequest is a rollback decision handed to the environment's executor.
type RollbackRequest struct {
	// Key is the idempotency key of the rollback: one per run attempt.
	Key            string
	Episode        Episode
	Target         Target
	Reason         string
	InstallationID int64
	// Asked is the executor's RollbackAsker answer, asked before the
	// decision's transaction; nil when it asks nothing.
	Asked any
}

// RollbackAsker is a RollbackExecutor that needs answers from GitHub to
// decide: Ask runs before the decision's transaction (nothing waits on the
// network inside it), and its answer is handed to Queue as req.Asked. A
// decision retried on fresh state asks again; an answer must stay true
// when Queue runs later (a pull request merged stays merged).
type RollbackAsker interface {
	Ask(ctx context.Context, req RollbackRequest) (any, error)
}

// Target is the release to roll back to.
type Target struct {
	ReleaseID string
	Version   string
	Digest    string
}

// RollbackExecutor carries out rollbacks of one mode (repoconfig's
// rollback.mode). Queue runs inside the transaction that stores the
// decision and queues the rollback's effects as jobs, idempotently under
// req.Key. It returns the rollback release it opens or will open, whose
// record ends the episode when it settles (QueueRollbackOutcomes), or ""
// when the executor ends the episode itself (mode workflow). A rollback
// that cannot be started is a *NotStarted: the episode then ends in
// rollback_failed at once. Modes without an executor are decided as an
// alert that says the mode is not available yet.
type RollbackExecutor interface {
	Mode() string
	Queue(ctx context.Context, tx *sql.Tx, req RollbackRequest) (releaseID string, err error)
}

// NotStarted is a rollback an executor cannot start, with the reason.
type NotStarted struct{ Reason string }

func (e *NotStarted) Error() string { return e.Reason }

// flow is the recovery capability: its handlers and workers share it.
type flow struct {
	deps      pipeline.Deps
	loader    *configload.Loader
	executors map[string]RollbackExecutor
	metrics   *metrics
}

// Register adds the recovery workers and returns the workflow_run handler.
// Executors add rollback modes; mode workflow is built in. The /ripcord
// retry command is RetryCommand, handed to commands.Register; SweepJob is
// the periodic job the server runs for overdue retries, RetentionJob the
// one that deletes finished episodes past retention.
func Register(d pipeline.Deps, executors ...RollbackExecutor) []pipeline.EventHandler {
	f := newFlow(d, executors...)
	river.AddWorker(d.Workers, &rerunWorker{f: f})
	river.AddWorker(d.Workers, &checkWorker{f: f})
	river.AddWorker(d.Workers, &alertWorker{f: f})
	river.AddWorker(d.Workers, &dispatchWorker{f: f})
	river.AddWorker(d.Workers, &commandRerunWorker{f: f})
	river.AddWorker(d.Workers, &outcomeWorker{f: f})
	river.AddWorker(d.Workers, &rerunSweepWorker{f: f})
	river.AddWorker(d.Workers, &retentionSweepWorker{f: f})
	return []pipeline.EventHandler{&workflowRunHandler{f: f}}
}

func newFlow(d pipeline.Deps, executors ...RollbackExecutor) *flow {
	f := &flow{deps: d, loader: configload.NewLoaderFor(d), executors: map[string]RollbackExecutor{}, metrics: newMetrics(d.Registerer)}
	f.executors[workflowMode] = workflowExecutor{f: f}
	for _, e := range executors {
		f.executors[e.Mode()] = e
	}
	return f
}

// modes lists the rollback modes with an executor.
func (f *flow) modes() []string {
	out := make([]string, 0, len(f.executors))
	for m := range f.executors {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// insert queues a job in tx, refusing a second one with the same unique arguments.
func (f *flow) insert(ctx context.Context, tx *sql.Tx, args river.JobArgs, opts river.InsertOpts) error {
	opts.UniqueOpts = river.UniqueOpts{ByArgs: true}
	if opts.MaxAttempts == 0 {
		opts.MaxAttempts = jobAttempts
	}
	if _, err := f.deps.River().InsertTx(ctx, tx, args, &opts); err != nil {
		return fmt.Errorf("queue %s: %w", args.Kind(), err)
	}
	return nil
}
