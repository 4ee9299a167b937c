package recoveryflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/internal/ghlimit"
	"github.com/ripcord/ripcord/records"
)

// LimitWait is the wait of the job that carries out an episode's decision
// (its scheduled re-run, its rollback dispatch) for GitHub's rate limit,
// kept in the episode's context: a snooze counts no attempt, so only this
// says how long the job has waited in all, and when it alerts.
type LimitWait struct {
	Job     string    `json:"job"`     // the job's kind
	Attempt int       `json:"attempt"` // the run attempt whose decision the job carries out
	Since   time.Time `json:"since"`   // the job's first rate-limited try
	Until   time.Time `json:"until"`   // when GitHub said, then, that the limit lifts
}

// limitWait is the wait of job, the job of the episode's current decision:
// none when the job has not met GitHub's rate limit, or the wait kept is
// an earlier decision's (a re-run's, before the retry was decided anew as
// a rollback).
func (e Episode) limitWait(job string) (LimitWait, bool) {
	w := e.Context.LimitWait
	if w == nil || w.Job != job || w.Attempt != e.RunAttempt || !e.waitsFor(job) {
		return LimitWait{}, false
	}
	return *w, true
}

// waitsFor reports whether the episode's decision waits for job: a
// scheduled retry for its re-run, a workflow rollback for its dispatch
// until GitHub has named the run.
func (e Episode) waitsFor(job string) bool {
	switch job {
	case kindRerun:
		return e.State == StateRetryScheduled
	case kindDispatch:
		return e.State == StateRollingBack && e.RollbackRunID <= 0
	}
	return false
}

// WaitForLimit records that job, carrying out the decision of attempt,
// first met GitHub's rate limit at at, which lifts at until. It keeps Seq
// and UpdatedAt: the caller says whether anyone is told (a rollback
// dispatch is; UpdatedAt is its mark's time). ok is false when the episode
// is not waiting for that job, or the wait is known already.
func (e Episode) WaitForLimit(job string, attempt int, until, at time.Time) (Episode, bool) {
	if e.RunAttempt != attempt || !e.waitsFor(job) {
		return e, false
	}
	if _, ok := e.limitWait(job); ok {
		return e, false
	}
	e.Context.LimitWait = &LimitWait{Job: job, Attempt: attempt, Since: at, Until: until}
	return e, true
}

// limited is a job of ep's decision that met GitHub's rate limit.
type limited struct {
	job   string    // its kind
	ep    Episode   // as the job last read it
	until time.Time // when the limit lifts (ghlimit.Lifts)
	cause error
	// notice tells the episode's check run and audit trail, once, that the
	// job waits: the episode is saved with a new Seq.
	notice func(next Episode) string
	// alert gives the job up with the recovery's usual alert, saying why.
	alert func(why string) error
}

// waitForLimit has a job of an episode's decision wait for GitHub's rate
// limit to lift (GitHub said "later", not "no", and did nothing), counting
// no attempt: River's backoff would spend the job's attempts against a
// limit that has not lifted, then alert as if GitHub had failed. The
// first wait is kept on the episode; once the job has waited
// ghlimit.AlertAfter since, it alerts instead (l.alert), and its waits
// until then end at that hour at the latest (ghlimit.Wait.Snooze), so that
// the alert is not late.
func (f *flow) waitForLimit(ctx context.Context, l limited) error {
	now := f.deps.Now()
	w, waiting := l.ep.limitWait(l.job)
	lw := ghlimit.Wait{Since: w.Since}
	if lw.AlertDue(now) {
		return l.alert(fmt.Sprintf("GitHub's rate limit for ripcord has held it back for %s, since %s (GitHub says the limit lasts until %s)",
			now.Sub(w.Since).Round(time.Second), stamp(w.Since), stamp(l.until)))
	}
	wait := lw.Snooze(l.until, now)
	f.deps.Log.Warn("GitHub's rate limit: the recovery job waits for it to lift", "kind", l.job, "repository", l.ep.Repository,
		"run_id", l.ep.RunID, "until", stamp(l.until), "again", stamp(now.Add(wait)), "error", l.cause)
	if !waiting {
		if err := f.keepLimitWait(ctx, l, now); err != nil && !errors.Is(err, errStale) {
			// The job waits all the same: the limit has not lifted either
			// way. Its next try keeps the wait, from then.
			f.deps.Log.Error("recovery job: its wait for GitHub's rate limit was not kept", "kind", l.job,
				"repository", l.ep.Repository, "run_id", l.ep.RunID, "error", err)
		}
	}
	return river.JobSnooze(wait)
}

// keepLimitWait stores the job's first wait on its episode, with the
// notice when the job gives one. A stale episode (it changed meanwhile)
// keeps nothing: the next try reads it afresh.
func (f *flow) keepLimitWait(ctx context.Context, l limited, now time.Time) error {
	next, ok := l.ep.WaitForLimit(l.job, l.ep.RunAttempt, l.until, now)
	if !ok {
		return nil
	}
	return f.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		if l.notice == nil {
			return saveEpisode(ctx, tx, next, l.ep.Seq)
		}
		next.Seq++
		if err := saveEpisode(ctx, tx, next, l.ep.Seq); err != nil {
			return err
		}
		ev := auditEvent(next, records.AuditStateChanged, "", now, l.notice(next))
		ev.Data["rate_limited"], ev.Data["until"] = l.job, stamp(l.until)
		if err := f.deps.Records.InsertAudit(ctx, tx, ev); err != nil {
			return err
		}
		return f.queueCheck(ctx, tx, next)
	})
}

// limitNotice says that the rollback of ep is not dispatched yet for
// GitHub's rate limit: the failed release stays live until it is, and a
// person may want to act before the limit lifts.
func limitNotice(ep Episode) string {
	w, rb := ep.Context.LimitWait, ep.Context.Config.Rollback
	workflow, repository := rb.Workflow, rb.Repository
	if repository == "" {
		repository = ep.Repository
	}
	return fmt.Sprintf("The rollback to %s is not dispatched yet: GitHub's rate limit for ripcord is spent until %s, so %s stays live "+
		"meanwhile. ripcord dispatches %s in %s once the limit lifts, and alerts if it still waits at %s.",
		targetName(ep.Decision.Target), stamp(w.Until), failedName(ep), workflow, repository, stamp(w.Since.Add(ghlimit.AlertAfter)))
}

// failedName names the failed release as people know it.
func failedName(ep Episode) string {
	if v := ep.Context.Input.FailedVersion; v != "" {
		return v
	}
	if ep.ReleaseID != "" {
		return ep.ReleaseID
	}
	return "the failed release"
}
