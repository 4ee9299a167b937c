package recoveryflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/records"
)

// workflowRunHandler reacts to completed workflow runs: a failure of a
// configured deploy workflow opens or moves an episode; a success closes one.
type workflowRunHandler struct{ f *flow }

func (*workflowRunHandler) Handles() []string { return []string{"workflow_run"} }

func (h *workflowRunHandler) Handle(ctx context.Context, d pipeline.Delivery) (pipeline.Commit, error) {
	var ev github.WorkflowRunEvent
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		return nil, fmt.Errorf("decode workflow_run event: %w", err)
	}
	wr := ev.GetWorkflowRun()
	inst := d.InstallationID
	if inst == 0 {
		inst = ev.GetInstallation().GetID()
	}
	if ev.GetAction() != "completed" || inst == 0 || wr.GetID() == 0 {
		return nil, nil
	}
	run := runInfo{ID: wr.GetID(), Attempt: max(wr.GetRunAttempt(), 1), Status: wr.GetStatus(), Conclusion: wr.GetConclusion(),
		CreatedAt: wr.GetCreatedAt().Time, Path: wr.GetPath(), HeadSHA: wr.GetHeadSHA(), Event: wr.GetEvent(),
		ChangedAt: newest(wr.GetCreatedAt().Time, wr.GetRunStartedAt().Time, wr.GetUpdatedAt().Time)}
	repo := ev.GetRepo().GetFullName()
	switch run.Conclusion {
	case "failure", "timed_out", startupFailure:
		// startup_failure: GitHub could not start the run (plan alerts).
		return h.f.onFailure(ctx, d, repo, inst, run)
	case "success":
		return h.f.onSuccess(ctx, d, repo, run)
	}
	// cancelled, skipped, …: a human or GitHub stopped it on purpose.
	return h.f.onStopped(ctx, d, repo, run)
}

// onStopped ends the wait of an episode whose awaited attempt was stopped
// on purpose, and fails the rollback of an episode whose rollback run was:
// the rollback did not happen.
func (f *flow) onStopped(ctx context.Context, d pipeline.Delivery, repo string, run runInfo) (pipeline.Commit, error) {
	ep, ok, err := getEpisode(ctx, f.deps.DB.Read, repo, run.ID)
	if err != nil {
		return nil, err
	}
	if !ok {
		rb, ok, err := episodeByRollbackRun(ctx, f.deps.DB.Read, repo, run.ID)
		if err != nil {
			return nil, err
		}
		if !ok {
			commit, _, err := f.onDispatchedRun(ctx, d, repo, run)
			return commit, err
		}
		return f.onRollbackRunFailure(d, rb, run), nil
	}
	next, ev, ok := stopped(ep, run, d.ID, f.deps.Now())
	if !ok {
		return nil, nil
	}
	return f.saveEpisode(next, ep.Seq, ev), nil
}

// stopped is ep once attempt run.Attempt of its run was stopped on purpose,
// with the audit event that says so; ok is false when that changes nothing.
func stopped(ep Episode, run runInfo, deliveryID string, now time.Time) (Episode, records.AuditEvent, bool) {
	next, ok := ep.Stop(run.Attempt, fmt.Sprintf("Attempt %d ended with conclusion %s, so ripcord stopped retrying; a later failed attempt is decided again.",
		run.Attempt, run.Conclusion), now)
	if !ok {
		return ep, records.AuditEvent{}, false
	}
	return next, auditEvent(next, records.AuditStateChanged, deliveryID, now, fmt.Sprintf(
		"Run %d attempt %d ended with conclusion %s; ripcord stopped retrying.", run.ID, run.Attempt, run.Conclusion)), true
}

// succeeded is ep once attempt run.Attempt of its run succeeded, with the
// audit event that says so; ok is false when that changes nothing.
func succeeded(ep Episode, run runInfo, deliveryID string, now time.Time) (Episode, records.AuditEvent, bool) {
	next, ok := ep.Succeed(run.Attempt, now)
	if !ok {
		return ep, records.AuditEvent{}, false
	}
	return next, auditEvent(next, records.AuditStateChanged, deliveryID, now, fmt.Sprintf(
		"Run %d succeeded on attempt %d after %d %s; the recovery episode is closed.",
		run.ID, run.Attempt, ep.RetryCount, plural(ep.RetryCount, "failure", "failures"))), true
}

// onFailure decides a failed attempt of a configured deploy workflow.
func (f *flow) onFailure(ctx context.Context, d pipeline.Delivery, repo string, inst int64, run runInfo) (pipeline.Commit, error) {
	prev, exists, err := getEpisode(ctx, f.deps.DB.Read, repo, run.ID)
	if err != nil {
		return nil, err
	}
	if exists && run.Attempt <= prev.RunAttempt {
		return nil, nil // decided already: a redelivery, or an older attempt arriving late
	}
	if !exists {
		// A rollback run ripcord dispatched is not a deploy to retry (or,
		// retries spent, to roll back in turn): its failure ends the rollback.
		ep, ok, err := episodeByRollbackRun(ctx, f.deps.DB.Read, repo, run.ID)
		if err != nil || ok {
			return f.onRollbackRunFailure(d, ep, run), err
		}
		// Nor is the rollback run of an earlier decision of an episode (a
		// person re-ran the deploy meanwhile), nor one GitHub has not named
		// yet (a dispatch answered 204).
		if commit, own, err := f.onDispatchedRun(ctx, d, repo, run); err != nil || own {
			return commit, err
		}
		if f.replayed(d, repo, run) {
			return nil, nil
		}
	}
	if owned, err := rolloutflow.OwnsRun(ctx, f.deps.DB.Read, repo, run.ID); err != nil || owned {
		// A batch of a rollout in waves: its on_failure decides, and a
		// re-run here would deploy the batch behind the rollout's back.
		return nil, err
	}
	gh, err := f.deps.GitHub.NewInstallationClient(inst)
	if err != nil {
		return nil, fmt.Errorf("github client for installation %d: %w", inst, err)
	}
	cfg, err := f.loader.Load(ctx, gh.Repositories, repo, "")
	if err != nil {
		return nil, err
	}
	if !cfg.Found {
		return nil, nil
	}
	if !cfg.Valid() {
		// Never silent: the failing ripcord/config check run says why ripcord does nothing.
		f.deps.Log.Warn("workflow run failed but the repository config does not load", "repository", repo, "run_id", run.ID, "err", cfg.Err())
		args := configload.CheckArgs{Repository: repo, HeadSHA: run.HeadSHA, InstallationID: inst}
		return func(ctx context.Context, tx *sql.Tx) error {
			return configload.QueueCheck(ctx, tx, f.deps.River(), args)
		}, nil
	}
	deploys := cfg.Config.AppForWorkflow(run.Path)
	if len(deploys) == 0 {
		return nil, nil
	}
	if !exists {
		prev = Episode{Repository: repo, RunID: run.ID}
	}
	g := gathered{Now: f.deps.Now(), Run: run, Config: cfg, Deploys: deploys, RetryCount: prev.NextRetryCount(), Modes: f.modes()}
	if err := f.gather(ctx, gh, repo, &g); err != nil {
		return nil, err
	}
	p := plan(g)
	base := prev
	base.InstallationID, base.Workflow, base.HeadSHA = inst, run.Path, run.HeadSHA
	base.App, base.Environment, base.Cluster, base.ReleaseID = p.Deploy.App, p.Deploy.Environment, p.Cluster, p.ReleaseID
	next, ok := base.Fail(Failure{Attempt: run.Attempt, Decision: p.Decision, Context: p.Context, At: g.Now})
	if !ok {
		return nil, nil
	}
	asked, err := f.ask(ctx, next)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, tx *sql.Tx) error {
		next, err := f.rollbackOnce(ctx, tx, next)
		if err != nil {
			return err
		}
		err = saveEpisode(ctx, tx, next, prev.Seq)
		if errors.Is(err, errStale) {
			if cur, ok, rerr := getEpisode(ctx, tx, repo, run.ID); rerr == nil && ok && cur.RunAttempt >= run.Attempt {
				return nil // another delivery of this attempt won: it was decided once
			}
		}
		if err != nil {
			return err
		}
		return f.effects(ctx, tx, next, decisionEvents(next, d.ID, true), asked)
	}, nil
}

// onSuccess closes the episode of a run whose later attempt succeeded, or
// the episode whose rollback run this was.
func (f *flow) onSuccess(ctx context.Context, d pipeline.Delivery, repo string, run runInfo) (pipeline.Commit, error) {
	ep, ok, err := getEpisode(ctx, f.deps.DB.Read, repo, run.ID)
	if err != nil {
		return nil, err
	}
	now := f.deps.Now()
	var next Episode
	var ev records.AuditEvent
	switch {
	case ok:
		if next, ev, ok = succeeded(ep, run, d.ID, now); !ok {
			return nil, nil
		}
	default:
		if ep, ok, err = episodeByRollbackRun(ctx, f.deps.DB.Read, repo, run.ID); err != nil {
			return nil, err
		}
		if !ok {
			commit, _, err := f.onDispatchedRun(ctx, d, repo, run)
			return commit, err
		}
		return f.onRollbackRunSuccess(d, ep, run), nil
	}
	return f.saveEpisode(next, ep.Seq, ev), nil
}

// saveEpisode is the commit of an episode's move to next from seq, with
// its audit event and check run.
func (f *flow) saveEpisode(next Episode, seq int, ev records.AuditEvent) pipeline.Commit {
	return func(ctx context.Context, tx *sql.Tx) error {
		if err := saveEpisode(ctx, tx, next, seq); err != nil {
			return err // stale: the delivery is retried on fresh state
		}
		if err := f.deps.Records.InsertAudit(ctx, tx, ev); err != nil {
			return err
		}
		return f.queueCheck(ctx, tx, next)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
