package recoveryflow

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/ghlimit"
	"github.com/ripcord/ripcord/internal/store"
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
func (DispatchArgs) Kind() string { return kindDispatch }

const kindDispatch = "recovery_dispatch"

// dispatchAttempts is low: a dispatch is not idempotent on GitHub's side,
// and ghclient never resends one, so a job only retries when GitHub said no.
const dispatchAttempts = 3

type dispatchWorker struct {
	river.WorkerDefaults[DispatchArgs]
	f *flow
}

func (w *dispatchWorker) Timeout(*river.Job[DispatchArgs]) time.Duration { return jobTimeout }

// Marks kept in an episode's RollbackRunID while the run its workflow
// rollback dispatched is not known. A dispatch is not idempotent on
// GitHub's side, so the mark is stored before the dispatch goes out: a job
// that runs again (its answer was lost, GitHub answered 5xx, or the run's
// id could not be stored) looks for the run instead of starting a second
// rollback.
const (
	// dispatchSent: the dispatch went out; whether GitHub started a run is
	// not known.
	dispatchSent int64 = -1
	// dispatchAccepted: GitHub accepted the dispatch without naming its run
	// (204, a GitHub that does not know return_run_details).
	dispatchAccepted int64 = -2
)

// Looking for a dispatched run: runs created since the mark, less GitHub's
// clock skew; a run GitHub accepted is looked for every dispatchLook, for
// dispatchGrace.
const (
	dispatchSkew  = time.Minute
	dispatchLook  = 5 * time.Second
	dispatchGrace = 2 * time.Minute
	// dispatchWindow bounds how long after a dispatch GitHub has not named
	// the run of, a dispatched run of the workflow is taken for its own.
	dispatchWindow = dispatchGrace + dispatchSkew
)

func (w *dispatchWorker) Work(ctx context.Context, job *river.Job[DispatchArgs]) error {
	a, f := job.Args, w.f
	ep, ok, err := getEpisode(ctx, f.deps.DB.Write, a.EpisodeRepository, a.RunID)
	if err != nil || !ok || ep.State != StateRollingBack || ep.RunAttempt != a.Attempt || ep.RollbackRunID > 0 {
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
	branch := r.GetDefaultBranch()
	if ep.RollbackRunID < 0 {
		runs, err := dispatchedRuns(ctx, gh, owner, repo, a.Workflow, branch, ep.UpdatedAt.Add(-dispatchSkew), ep.RunID)
		if err != nil {
			return w.giveUp(ctx, job, ep, err)
		}
		if runs, err = f.unclaimed(ctx, runs); err != nil {
			return err
		}
		switch {
		case len(runs) == 1:
			f.deps.Log.Info("rollback run found", "repository", a.Repository, "workflow", a.Workflow, "run_id", runs[0])
			return w.dispatched(ctx, ep, a.Attempt, runs[0])
		case len(runs) > 1:
			return w.notFound(ctx, ep, fmt.Sprintf("ripcord dispatched %s in %s but did not get GitHub's answer, and runs %s were dispatched since: it cannot tell which is the rollback",
				a.Workflow, a.Repository, joinIDs(runs)))
		case f.deps.Now().Sub(ep.UpdatedAt) < dispatchGrace:
			// Accepted, or sent with its answer lost: GitHub may list the
			// run some seconds after it acted, so no run yet is not yet
			// "GitHub did not start one".
			return river.JobSnooze(dispatchLook)
		case ep.RollbackRunID == dispatchAccepted:
			return w.notFound(ctx, ep, fmt.Sprintf("GitHub accepted the dispatch of %s in %s without naming its run, and no run of it appeared within %s",
				a.Workflow, a.Repository, dispatchGrace))
		}
		// Sent, and no run within the grace: GitHub did not start one, so
		// send it again.
	}
	if ep, err = w.mark(ctx, ep, a, dispatchSent); err != nil {
		return err
	}
	runID, err := dispatch(ctx, gh, owner, repo, a.Workflow, branch, map[string]any{a.Input: a.Version})
	if err != nil && ghlimit.Limited(err) {
		// GitHub refused the dispatch for its rate limit, or the client
		// held it back unsent: no run was started, so the next try sends
		// it at once instead of looking for a run first.
		if unmarked, uerr := w.mark(ctx, ep, a, 0); uerr == nil {
			ep = unmarked
		}
	}
	if err != nil {
		return w.giveUp(ctx, job, ep, err)
	}
	f.metrics.effects.WithLabelValues("dispatch", "done").Inc()
	f.deps.Log.Info("rollback dispatched", "repository", a.Repository, "workflow", a.Workflow, "version", a.Version, "run_id", runID)
	if runID == 0 {
		if _, err := w.mark(ctx, ep, a, dispatchAccepted); err != nil {
			return err
		}
		return river.JobSnooze(dispatchLook)
	}
	return w.dispatched(ctx, ep, a.Attempt, runID)
}

// mark stores mark as the episode's rollback run, with the time it was
// set. It keeps Seq: nothing a user sees changed, and a write that moves
// the episode on over it makes the mark moot.
//
// The dispatch is kept in rollback_dispatches too, beyond the episode's
// decision: its run is then known as ripcord's rollback, not a deploy,
// also while GitHub has not named it and after a new decision.
func (w *dispatchWorker) mark(ctx context.Context, ep Episode, a DispatchArgs, mark int64) (Episode, error) {
	next := ep
	next.RollbackRunID, next.UpdatedAt = mark, w.f.deps.Now()
	err := w.f.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		if err := saveEpisode(ctx, tx, next, ep.Seq); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO rollback_dispatches (episode_repository, episode_run_id, attempt, repository,
			workflow, dispatched_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (episode_repository, episode_run_id, attempt) DO NOTHING`,
			ep.Repository, ep.RunID, ep.RunAttempt, a.Repository, a.Workflow, store.Micros(next.UpdatedAt))
		return err
	})
	if err != nil {
		return ep, fmt.Errorf("note the rollback dispatch of %s#%d: %w", ep.Repository, ep.RunID, err)
	}
	return next, nil
}

// dispatched records the episode's rollback run.
func (w *dispatchWorker) dispatched(ctx context.Context, ep Episode, attempt int, runID int64) error {
	f := w.f
	return f.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		next, ok := ep.RollbackDispatched(attempt, runID, f.deps.Now())
		if !ok {
			return nil
		}
		if err := saveEpisode(ctx, tx, next, ep.Seq); err != nil {
			return err
		}
		if err := nameDispatchedRun(ctx, tx, next, runID); err != nil {
			return err
		}
		return f.queueCheck(ctx, tx, next)
	})
}

// nameDispatchedRun records runID as the run of ep's rollback dispatch.
func nameDispatchedRun(ctx context.Context, tx *sql.Tx, ep Episode, runID int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE rollback_dispatches SET run_id = $4
		WHERE episode_repository = $1 AND episode_run_id = $2 AND attempt = $3`, ep.Repository, ep.RunID, ep.RunAttempt, runID)
	if err != nil {
		return fmt.Errorf("record rollback run %d of %s#%d: %w", runID, ep.Repository, ep.RunID, err)
	}
	return nil
}

// notFound ends a rollback whose run ripcord cannot tell: a person has to
// look at the workflow's runs.
func (w *dispatchWorker) notFound(ctx context.Context, ep Episode, why string) error {
	w.f.metrics.effects.WithLabelValues("dispatch", "refused").Inc()
	return w.f.deps.DB.InTx(ctx, func(tx *sql.Tx) error { return w.f.rollbackFailed(ctx, tx, ep, why, "") })
}

// dispatchedRuns lists the runs of workflow dispatched on branch since
// since, but run (the failed deploy's own). GitHub lists runs newest
// first, so the pages stop at the first older run.
func dispatchedRuns(ctx context.Context, gh *github.Client, owner, repo, workflow, branch string, since time.Time, run int64) ([]int64, error) {
	opts := &github.ListWorkflowRunsOptions{Event: "workflow_dispatch", Branch: branch, ListOptions: github.ListOptions{PerPage: 100}}
	var ids []int64
	for {
		list, resp, err := gh.Actions.ListWorkflowRunsByFileName(ctx, owner, repo, workflow, opts)
		if err != nil {
			return nil, fmt.Errorf("look for the rollback run of %s in %s/%s: %w", workflow, owner, repo, err)
		}
		older := false
		for _, r := range list.WorkflowRuns {
			switch {
			case r.GetCreatedAt().Before(since):
				older = true
			case r.GetID() != run:
				ids = append(ids, r.GetID())
			}
		}
		if older || resp.NextPage == 0 {
			return ids, nil
		}
		opts.Page = resp.NextPage
	}
}

// unclaimed keeps the runs no episode knows: neither another rollback's
// run (two environments deployed by one workflow roll back at once) nor a
// failed deploy of its own.
func (f *flow) unclaimed(ctx context.Context, runs []int64) ([]int64, error) {
	var out []int64
	for _, id := range runs {
		var n int
		if err := f.deps.DB.Read.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM episodes WHERE rollback_run_id = $1 OR run_id = $1)
			+ (SELECT COUNT(*) FROM rollback_dispatches WHERE run_id = $1)`, id).Scan(&n); err != nil {
			return nil, fmt.Errorf("is run %d another episode's: %w", id, err)
		}
		if n == 0 {
			out = append(out, id)
		}
	}
	return out, nil
}

func joinIDs(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, ", ")
}

// giveUp returns err for River to retry, unless GitHub refused (asking
// again gets the same answer) or this was the last attempt: then the episode
// would say "Rolling back" forever, so the rollback is recorded as failed.
//
// GitHub's rate limit is no such answer: the job waits for it to lift
// (waitForLimit), and says so at once on the episode's check run, as the
// failed release stays live meanwhile; it ends rollback_failed the same
// way only once it has waited an hour in all.
func (w *dispatchWorker) giveUp(ctx context.Context, job *river.Job[DispatchArgs], ep Episode, err error) error {
	a, f := job.Args, w.f
	failed := func(why string) error {
		f.metrics.effects.WithLabelValues("dispatch", "refused").Inc()
		if txErr := f.deps.DB.InTx(ctx, func(tx *sql.Tx) error { return f.rollbackFailed(ctx, tx, ep, why, "") }); txErr != nil {
			return txErr
		}
		return river.JobCancel(err)
	}
	did := fmt.Sprintf("GitHub did not dispatch %s in %s with %s %s", a.Workflow, a.Repository, a.Input, a.Version)
	if until, _, isLimit := ghlimit.Lifts(err, f.deps.Now()); isLimit && ctx.Err() == nil {
		return f.waitForLimit(ctx, limited{job: kindDispatch, ep: ep, until: until, cause: err,
			notice: limitNotice,
			alert:  func(why string) error { return failed(did + ": " + why) }})
	}
	if !refused(err) && job.Attempt < job.MaxAttempts {
		return err
	}
	return failed(fmt.Sprintf("%s (%s)", did, githubMessage(err)))
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

// onRollbackRunSuccess closes the episode whose rollback run succeeded;
// nil when it has moved on already.
func (f *flow) onRollbackRunSuccess(d pipeline.Delivery, ep Episode, run runInfo) pipeline.Commit {
	now := f.deps.Now()
	next, ok := ep.RolledBack(now)
	if !ok {
		return nil
	}
	ev := auditEvent(next, records.AuditRollbackCompleted, d.ID, now, fmt.Sprintf(
		"Rollback run %d succeeded: %s is back on %s.", run.ID, where(next.Environment, next.Cluster), targetName(next.Decision.Target)))
	return f.saveEpisode(next, ep.Seq, ev)
}

// onDispatchedRun handles a completed run that no episode of its
// repository follows but that a workflow rollback of recovery started: own
// is true then, and the run is never a deploy to decide. It is the run of a
// dispatch recorded as run run.ID: the rollback run of an episode in
// another repository (rollback.repository), which its outcome ends, or of
// an episode with a new decision since (a person re-ran the deploy), which
// it does not. Or it was dispatched (event
// workflow_dispatch, the rollback's workflow, created since the dispatch)
// while GitHub has not named the run of a dispatch (answered 204): the
// episode still waiting for that run follows it and takes its outcome.
func (f *flow) onDispatchedRun(ctx context.Context, d pipeline.Delivery, repo string, run runInfo) (pipeline.Commit, bool, error) {
	workflow := "" // no dispatch has an empty workflow: only run_id matches
	if run.Event == "workflow_dispatch" && !run.CreatedAt.IsZero() {
		workflow = path.Base(run.Path)
	}
	created := store.Micros(run.CreatedAt)
	rows, err := f.deps.DB.Read.QueryContext(ctx, `SELECT episode_repository, episode_run_id, attempt, run_id FROM rollback_dispatches
		WHERE repository = $1 AND (run_id = $2 OR (run_id = 0 AND workflow = $3 AND dispatched_at BETWEEN $4 AND $5))`,
		repo, run.ID, workflow, created-dispatchWindow.Microseconds(), created+dispatchSkew.Microseconds())
	if err != nil {
		return nil, false, fmt.Errorf("is run %d a rollback run: %w", run.ID, err)
	}
	type dispatchRow struct {
		repository string
		runID      int64
		attempt    int
		rollback   int64
	}
	var found []dispatchRow
	for rows.Next() {
		var r dispatchRow
		if err := rows.Scan(&r.repository, &r.runID, &r.attempt, &r.rollback); err != nil {
			rows.Close()
			return nil, false, fmt.Errorf("is run %d a rollback run: %w", run.ID, err)
		}
		found = append(found, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("is run %d a rollback run: %w", run.ID, err)
	}
	var waiting []Episode
	for _, r := range found {
		if r.rollback == run.ID {
			// The rollback workflow may live in another repository than
			// the episode (rollback.repository): its run is found here.
			if ep, ok, err := getEpisode(ctx, f.deps.DB.Read, r.repository, r.runID); err != nil || (ok && ep.RollbackRunID == run.ID) {
				if err != nil {
					return nil, false, err
				}
				if run.Conclusion == "success" {
					return f.onRollbackRunSuccess(d, ep, run), true, nil
				}
				return f.onRollbackRunFailure(d, ep, run), true, nil
			}
			f.deps.Log.Info("run of an earlier rollback ended; its episode has decided anew since", "repository", repo,
				"run_id", run.ID, "conclusion", run.Conclusion, "episode", RunKey(r.repository, r.runID))
			return nil, true, nil
		}
		ep, ok, err := getEpisode(ctx, f.deps.DB.Read, r.repository, r.runID)
		if err != nil {
			return nil, false, err
		}
		if ok && ep.State == StateRollingBack && ep.RunAttempt == r.attempt && ep.RollbackRunID < 0 {
			waiting = append(waiting, ep)
		}
	}
	switch {
	case len(found) == 0:
		return nil, false, nil
	case len(waiting) > 1:
		// Two rollbacks of this workflow wait for their runs: their
		// dispatch jobs tell which is which; this delivery is retried then.
		return nil, true, fmt.Errorf("run %d of %s may be the rollback run of %d episodes; waiting for their dispatches to name their runs",
			run.ID, repo, len(waiting))
	case len(waiting) == 0:
		return nil, true, nil // a dispatch of an earlier decision: the episode moved on
	}
	ep := waiting[0]
	return func(ctx context.Context, tx *sql.Tx) error {
		next, ok := ep.RollbackDispatched(ep.RunAttempt, run.ID, f.deps.Now())
		if !ok {
			return nil
		}
		if err := saveEpisode(ctx, tx, next, ep.Seq); err != nil {
			return err // stale: the delivery is retried on fresh state
		}
		if err := nameDispatchedRun(ctx, tx, next, run.ID); err != nil {
			return err
		}
		var then pipeline.Commit
		if run.Conclusion == "success" {
			then = f.onRollbackRunSuccess(d, next, run)
		} else {
			then = f.onRollbackRunFailure(d, next, run)
		}
		if then == nil {
			return f.queueCheck(ctx, tx, next)
		}
		return then(ctx, tx)
	}, true, nil
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
