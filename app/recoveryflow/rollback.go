package recoveryflow

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/recovery"
	"github.com/ripcord/ripcord/repoconfig"
)

// RuleRollbackFailed names the alert decided when a rollback ripcord
// started did not happen.
const RuleRollbackFailed = "alert-rollback-failed"

// workflowMode is the rollback mode this package carries out itself.
const workflowMode = repoconfig.ModeWorkflow

// workflowExecutor rolls back by dispatching the environment's deploy
// workflow with the previous version as its input.
type workflowExecutor struct{ f *flow }

func (workflowExecutor) Mode() string { return workflowMode }

func (x workflowExecutor) Queue(ctx context.Context, tx *sql.Tx, req RollbackRequest) (string, error) {
	ep, rb := req.Episode, req.Episode.Context.Config.Rollback
	repo := rb.Repository
	if repo == "" {
		repo = ep.Repository
	}
	// The dispatched run ends the episode (onSuccess, onRollbackRunFailure).
	return "", x.f.insert(ctx, tx, DispatchArgs{
		Key: req.Key, Repository: repo, Workflow: rb.Workflow, Input: rb.Input, Version: req.Target.Version,
		EpisodeRepository: ep.Repository, RunID: ep.RunID, Attempt: ep.RunAttempt, InstallationID: req.InstallationID,
	}, river.InsertOpts{MaxAttempts: dispatchAttempts})
}

// DispatchArgs dispatches a deploy workflow with the version to roll back
// to. Key (one per failed run attempt) is the idempotency key.
type DispatchArgs struct {
	Key               string `json:"key" river:"unique"`
	Repository        string `json:"repository"` // where the workflow lives
	Workflow          string `json:"workflow"`   // its file name
	Input             string `json:"input"`      // the input that takes the version
	Version           string `json:"version"`
	EpisodeRepository string `json:"episode_repository"`
	RunID             int64  `json:"run_id"`
	Attempt           int    `json:"attempt"`
	InstallationID    int64  `json:"installation_id"`
}

// Kind names the job in the queue.
func (DispatchArgs) Kind() string { return "recovery_dispatch" }

// dispatchAttempts is low: a dispatch is not idempotent on GitHub's side,
// and ghclient never resends one, so a job only retries when GitHub said no.
const dispatchAttempts = 3

type dispatchWorker struct {
	river.WorkerDefaults[DispatchArgs]
	f *flow
}

func (w *dispatchWorker) Timeout(*river.Job[DispatchArgs]) time.Duration { return jobTimeout }

func (w *dispatchWorker) Work(ctx context.Context, job *river.Job[DispatchArgs]) error {
	a, f := job.Args, w.f
	ep, ok, err := getEpisode(ctx, f.deps.DB.Write, a.EpisodeRepository, a.RunID)
	if err != nil || !ok || ep.State != StateRollingBack || ep.RunAttempt != a.Attempt || ep.RollbackRunID != 0 {
		return err // moved on, or dispatched already
	}
	gh, err := f.deps.GitHub.NewInstallationClient(a.InstallationID)
	if err != nil {
		return fmt.Errorf("github client for installation %d: %w", a.InstallationID, err)
	}
	owner, repo, _ := strings.Cut(a.Repository, "/")
	r, _, err := gh.Repositories.Get(ctx, owner, repo)
	if err != nil {
		return w.giveUp(ctx, job, ep, fmt.Errorf("default branch of %s: %w", a.Repository, err))
	}
	runID, err := dispatch(ctx, gh, owner, repo, a.Workflow, r.GetDefaultBranch(), map[string]any{a.Input: a.Version})
	if err != nil {
		return w.giveUp(ctx, job, ep, err)
	}
	f.metrics.effects.WithLabelValues("dispatch", "done").Inc()
	f.deps.Log.Info("rollback dispatched", "repository", a.Repository, "workflow", a.Workflow, "version", a.Version, "run_id", runID)
	return f.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		next, ok := ep.RollbackDispatched(a.Attempt, runID, f.deps.Now())
		if !ok || runID == 0 {
			return nil
		}
		if err := saveEpisode(ctx, tx, next, ep.Seq); err != nil {
			return err
		}
		return f.queueCheck(ctx, tx, next)
	})
}

// giveUp returns err for River to retry, unless GitHub refused (asking
// again gets the same answer) or this was the last attempt: then the episode
// would say "Rolling back" forever, so the rollback is recorded as failed.
func (w *dispatchWorker) giveUp(ctx context.Context, job *river.Job[DispatchArgs], ep Episode, err error) error {
	if !refused(err) && job.Attempt < job.MaxAttempts {
		return err
	}
	a := job.Args
	w.f.metrics.effects.WithLabelValues("dispatch", "refused").Inc()
	why := fmt.Sprintf("GitHub did not dispatch %s in %s with %s %s (%s)", a.Workflow, a.Repository, a.Input, a.Version, githubMessage(err))
	if txErr := w.f.deps.DB.InTx(ctx, func(tx *sql.Tx) error { return w.f.rollbackFailed(ctx, tx, ep, why, "") }); txErr != nil {
		return txErr
	}
	return river.JobCancel(err)
}

// dispatchRequest is the body of a workflow dispatch. go-github v66's
// CreateWorkflowDispatchEventRequest has no return_run_details, so the
// request is built by hand.
type dispatchRequest struct {
	Ref              string         `json:"ref"`
	Inputs           map[string]any `json:"inputs,omitempty"`
	ReturnRunDetails bool           `json:"return_run_details"`
}

// dispatchResponse is GitHub's answer with return_run_details.
type dispatchResponse struct {
	WorkflowRunID int64  `json:"workflow_run_id"`
	RunURL        string `json:"run_url"`
	HTMLURL       string `json:"html_url"`
}

// dispatch starts workflow on ref and returns the run GitHub created (0 when
// GitHub answered 204 without details).
func dispatch(ctx context.Context, gh *github.Client, owner, repo, workflow, ref string, inputs map[string]any) (int64, error) {
	u := fmt.Sprintf("repos/%s/%s/actions/workflows/%s/dispatches", url.PathEscape(owner), url.PathEscape(repo), url.PathEscape(workflow))
	req, err := gh.NewRequest("POST", u, dispatchRequest{Ref: ref, Inputs: inputs, ReturnRunDetails: true})
	if err != nil {
		return 0, fmt.Errorf("dispatch %s on %s/%s: %w", workflow, owner, repo, err)
	}
	var out dispatchResponse
	if _, err := gh.Do(ctx, req, &out); err != nil {
		return 0, fmt.Errorf("dispatch %s on %s/%s@%s: %w", workflow, owner, repo, ref, err)
	}
	return out.WorkflowRunID, nil
}

// onRollbackRunFailure turns the episode whose rollback run failed into an
// alert; nil when it has moved on already (a redelivery).
func (f *flow) onRollbackRunFailure(d pipeline.Delivery, ep Episode, run runInfo) pipeline.Commit {
	if ep.Seq == 0 {
		return nil
	}
	why := fmt.Sprintf("rollback run %d (attempt %d) ended with conclusion %s", run.ID, run.Attempt, run.Conclusion)
	return func(ctx context.Context, tx *sql.Tx) error {
		return f.rollbackFailed(ctx, tx, ep, why, d.ID)
	}
}

// rollbackFailed records that the episode's rollback did not happen, and
// why, as rollback_failed and an alert for a human.
func (f *flow) rollbackFailed(ctx context.Context, tx *sql.Tx, ep Episode, why, deliveryID string) error {
	d := ep.Decision
	alert := recovery.Decision{
		Action: recovery.ActionAlert, Rule: RuleRollbackFailed,
		Reason: fmt.Sprintf("The rollback of %s in %s to %s failed: %s. A human has to check what runs there and decide.",
			ep.App, where(ep.Environment, ep.Cluster), targetName(d.Target), why),
		Attempt: d.Attempt, MaxAttempts: d.MaxAttempts, Target: d.Target,
		AuditEvents: []string{string(records.AuditRollbackFailed), recovery.EventManualInterventionRequired},
	}
	next, ok := ep.RollbackFailed(ep.RunAttempt, alert, f.deps.Now())
	if !ok {
		return nil
	}
	if err := saveEpisode(ctx, tx, next, ep.Seq); err != nil {
		return err // stale: retried on fresh state, which then has moved on
	}
	return f.effects(ctx, tx, next, decisionEvents(next, deliveryID, false), nil)
}
