package recoveryflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/ghlimit"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/recovery"
)

// Rules of the alerts decided when a scheduled re-run cannot be carried
// out: GitHub refuses it although ripcord's own view of GitHub's limits
// allowed it, or GitHub did not answer it through the job's last attempt.
const (
	RuleRerunRefused = "alert-rerun-refused"
	RuleRerunFailed  = "alert-rerun-failed"
)

// jobTimeout bounds one recovery job.
const jobTimeout = time.Minute

// RerunArgs is a scheduled retry: re-run the failed jobs of one attempt of a
// run. The run and attempt are the idempotency key, so a redelivered
// failure never queues a second re-run, and the job fires once.
type RerunArgs struct {
	Repository     string `json:"repository" river:"unique"`
	RunID          int64  `json:"run_id" river:"unique"`
	Attempt        int    `json:"attempt" river:"unique"`
	InstallationID int64  `json:"installation_id"`
}

// Kind names the job in the queue.
func (RerunArgs) Kind() string { return kindRerun }

const kindRerun = "recovery_rerun"

type rerunWorker struct {
	river.WorkerDefaults[RerunArgs]
	f *flow
}

func (w *rerunWorker) Timeout(*river.Job[RerunArgs]) time.Duration { return jobTimeout }

// Work re-runs the failed jobs if the episode still waits for this retry.
// When that cannot be done — GitHub refuses to show the run, or the job's
// last attempt failed too — the episode would say "Retry 1 of 3" forever, so
// the retry is replaced with an alert that says why. GitHub's rate limit
// is neither: the job waits for it to lift (waitForLimit), and alerts the
// same way only once it has waited an hour in all.
func (w *rerunWorker) Work(ctx context.Context, job *river.Job[RerunArgs]) error {
	err := w.work(ctx, job)
	if err == nil {
		return nil
	}
	a, f := job.Args, w.f
	until, _, isLimit := ghlimit.Lifts(err, f.deps.Now())
	limit := isLimit && ctx.Err() == nil
	if !limit && !refused(err) && job.Attempt < job.MaxAttempts {
		return err
	}
	ep, ok, gerr := getEpisode(ctx, f.deps.DB.Read, a.Repository, a.RunID)
	switch {
	case limit && gerr != nil:
		return pipeline.LimitSnooze(ctx, f.deps, job.Kind, err)
	case limit && (!ok || ep.State != StateRetryScheduled || ep.RunAttempt != a.Attempt):
		return nil // moved on while it asked GitHub: nothing is left to wait for
	case gerr != nil || !ok || ep.State != StateRetryScheduled || ep.RunAttempt != a.Attempt:
		return err
	}
	giveUp := func(d recovery.Decision) error {
		in := ep.Context.Input
		in.Now = f.deps.Now()
		if rerr := f.redecide(ctx, ep, d, in); rerr != nil {
			return rerr
		}
		return river.JobCancel(err)
	}
	d := refusedDecision(ep, err)
	if limit {
		return f.waitForLimit(ctx, limited{job: kindRerun, ep: ep, until: until, cause: err, alert: func(why string) error {
			d.Rule = RuleRerunFailed
			d.Reason = fmt.Sprintf("ripcord could not re-run the failed jobs of run %d: %s; a human has to decide.", ep.RunID, why)
			return giveUp(d)
		}})
	}
	if !refused(err) {
		d.Rule = RuleRerunFailed
		d.Reason = fmt.Sprintf("ripcord could not re-run the failed jobs of run %d in %d attempts (%s); a human has to decide.",
			ep.RunID, job.Attempt, githubMessage(err))
	}
	return giveUp(d)
}

// work reads the run first: someone may have re-run it meanwhile, and
// GitHub's limits are checked again at the time the retry fires.
func (w *rerunWorker) work(ctx context.Context, job *river.Job[RerunArgs]) error {
	a, f := job.Args, w.f
	ep, ok, err := getEpisode(ctx, f.deps.DB.Read, a.Repository, a.RunID)
	if err != nil {
		return err
	}
	if !ok || ep.State != StateRetryScheduled || ep.RunAttempt != a.Attempt {
		f.metrics.effects.WithLabelValues("rerun", "skipped").Inc()
		return nil // closed or moved on since it was scheduled
	}
	gh, err := f.deps.GitHub.NewInstallationClient(a.InstallationID)
	if err != nil {
		return fmt.Errorf("github client for installation %d: %w", a.InstallationID, err)
	}
	run, moved, err := currentRun(ctx, gh, a.Repository, a.RunID, a.Attempt)
	if err != nil {
		return err
	}
	if moved {
		f.metrics.effects.WithLabelValues("rerun", "skipped").Inc()
		return f.movedOn(ctx, ep, run)
	}
	in := ep.Context.Input
	in.Now, in.Run, in.Due = f.deps.Now(), run.recoveryRun(), true
	if d := recovery.Decide(in); d.Action != recovery.ActionRetry {
		return f.redecide(ctx, ep, d, in)
	}
	owner, repo, _ := strings.Cut(a.Repository, "/")
	_, err = gh.Actions.RerunFailedJobsByID(ctx, owner, repo, a.RunID)
	if refused(err) && rerunHappened(ctx, gh, a.Repository, a.RunID, a.Attempt) {
		err = nil
	}
	if refused(err) {
		f.metrics.effects.WithLabelValues("rerun", "refused").Inc()
		return f.redecide(ctx, ep, refusedDecision(ep, err), in)
	}
	if err != nil {
		return fmt.Errorf("re-run failed jobs of %s run %d: %w", a.Repository, a.RunID, err)
	}
	f.metrics.effects.WithLabelValues("rerun", "done").Inc()
	return f.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		next, ok := ep.RerunRequested(a.Attempt, f.deps.Now())
		if !ok {
			return nil
		}
		if err := saveEpisode(ctx, tx, next, ep.Seq); err != nil {
			// The re-run happened; a concurrent change (its success
			// arriving already) wins over this bookkeeping.
			if errors.Is(err, errStale) {
				return nil
			}
			return err
		}
		return f.queueCheck(ctx, tx, next)
	})
}

// movedOn settles an episode whose scheduled retry found the run past the
// attempt it was for. A later attempt that failed is left to its own
// workflow_run delivery; so is one still running, but the episode then
// waits for it, so the check run stops announcing a retry that is past due
// and will not come. One that succeeded or was stopped is
// applied here: its delivery may have come before the failure this retry was
// scheduled for (webhooks arrive out of order) and found no episode to
// close, and the episode would then wait for a retry that never comes.
func (f *flow) movedOn(ctx context.Context, ep Episode, run runInfo) error {
	if run.Attempt <= ep.RunAttempt {
		return nil
	}
	now := f.deps.Now()
	var next Episode
	var ev records.AuditEvent
	var ok bool
	switch {
	case run.Status != "completed":
		// Usually a person's re-run, but not always: ripcord's own re-run
		// whose bookkeeping failed after GitHub started it reads the same.
		if next, ok = ep.WaitForRerun(ep.RunAttempt, run.Attempt, now); ok {
			ev = auditEvent(next, records.AuditStateChanged, "", now, fmt.Sprintf(
				"Retry %d of run %d was due, but attempt %d, started since, is running; ripcord waits for its outcome.",
				ep.Decision.Attempt, run.ID, run.Attempt))
		}
	default:
		next, ev, ok = endedAttempt(ep, run, now)
	}
	if !ok {
		return nil
	}
	return f.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		return f.saveEpisode(next, ep.Seq, ev)(ctx, tx) // stale: River retries the job, which then finds the new state
	})
}

// endedAttempt is ep once a later attempt of its run ended: success closes
// it, a stop ends the wait; a failure changes nothing here.
func endedAttempt(ep Episode, run runInfo, now time.Time) (Episode, records.AuditEvent, bool) {
	var next Episode
	var ev records.AuditEvent
	var ok bool
	switch run.Conclusion {
	case "failure", "timed_out", startupFailure:
		return ep, ev, false
	case "success":
		next, ev, ok = succeeded(ep, run, "", now)
	default:
		next, ev, ok = stopped(ep, run, "", now)
	}
	return next, ev, ok
}

// currentRun reads the run; moved is true when it is no longer the
// completed attempt the job was for (re-run by hand, or running).
func currentRun(ctx context.Context, gh *github.Client, repository string, runID int64, attempt int) (runInfo, bool, error) {
	owner, repo, _ := strings.Cut(repository, "/")
	wr, _, err := gh.Actions.GetWorkflowRunByID(ctx, owner, repo, runID)
	if err != nil {
		return runInfo{}, false, fmt.Errorf("read %s run %d: %w", repository, runID, err)
	}
	run := runInfo{ID: runID, Attempt: max(wr.GetRunAttempt(), 1), Status: wr.GetStatus(), Conclusion: wr.GetConclusion(),
		CreatedAt: wr.GetCreatedAt().Time, Path: wr.GetPath(), HeadSHA: wr.GetHeadSHA()}
	return run, run.Attempt != attempt || run.Status != "completed", nil
}

// rerunHappened reports whether the run has moved past attempt after GitHub
// refused a re-run of it. ghclient repeats a re-run answered with a 5xx or a
// timeout, and when GitHub had accepted the first request the repeat is
// refused because the run is running again: then the re-run did happen.
func rerunHappened(ctx context.Context, gh *github.Client, repository string, runID int64, attempt int) bool {
	run, moved, err := currentRun(ctx, gh, repository, runID, attempt)
	return err == nil && moved && run.Attempt > attempt
}

// refused reports a 4xx answer: GitHub will not re-run this run, and
// asking again will not change that. A rate limit is not one, even a 403
// go-github cannot tell from a refusal (one that only names Retry-After):
// asking again later will change it.
func refused(err error) bool {
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode >= 400 && er.Response.StatusCode < 500 &&
		er.Response.StatusCode != http.StatusTooManyRequests && !ghlimit.Limited(err)
}

// refusedDecision is the alert that follows a refused re-run.
func refusedDecision(ep Episode, err error) recovery.Decision {
	return recovery.Decision{
		Action: recovery.ActionAlert, Rule: RuleRerunRefused,
		Reason: fmt.Sprintf("GitHub refused to re-run the failed jobs of run %d (%s)%s; a human has to decide.",
			ep.RunID, githubMessage(err), permissionHint(err)),
		Attempt: ep.Decision.Attempt, MaxAttempts: ep.Decision.MaxAttempts,
		AuditEvents: []string{recovery.EventManualInterventionRequired},
	}
}

// permissionHint names the permission a 403 "not accessible by
// integration" lacks (seed 000 logs such a 403 as a missing permission):
// GitHub's words alone do not say which one, and a person would otherwise
// look for a fault in the run.
func permissionHint(err error) string {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusForbidden &&
		strings.Contains(strings.ToLower(er.Message), "not accessible by integration") {
		return ": the ripcord App lacks the actions: write permission on this repository, or the installation has not accepted it"
	}
	return ""
}

// githubMessage is GitHub's own words for an error, when it gave some.
func githubMessage(err error) string {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Message != "" {
		return er.Message
	}
	return err.Error()
}

// redecide replaces the scheduled retry with d, decided from in at the time
// the retry fired, and queues d's effects.
func (f *flow) redecide(ctx context.Context, ep Episode, d recovery.Decision, in recovery.Input) error {
	next, ok := ep.Redecide(ep.RunAttempt, d, f.deps.Now())
	if !ok {
		return nil
	}
	next.Context.Input = in
	asked, err := f.ask(ctx, next)
	if err != nil {
		return err
	}
	return f.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		next, err := f.rollbackOnce(ctx, tx, next)
		if err != nil {
			return err
		}
		if err := saveEpisode(ctx, tx, next, ep.Seq); err != nil {
			return err // stale: River retries the job, which then finds the new state
		}
		return f.effects(ctx, tx, next, decisionEvents(next, "", false), asked)
	})
}
