package rollbackflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/commands"
	"github.com/ripcord/ripcord/app/deployments"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/app/recoveryflow"
	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/rollbackpr"
)

// Job settings: GitHub may be down for a while; Open is idempotent, so
// retrying is safe.
const (
	jobAttempts = 10
	jobTimeout  = 2 * time.Minute
)

// PullRequestArgs opens one rollback's pull request and then its release
// record. ReleaseID is the idempotency key: one job per rollback, ever.
type PullRequestArgs struct {
	ReleaseID string `json:"release_id" river:"unique"`
	Plan      Plan   `json:"plan"`
	// Reply, when set, is the comment thread to answer with the result.
	Reply *ReplyTo `json:"reply,omitempty"`
}

// ReplyTo is where a command or button asked for the rollback.
type ReplyTo struct {
	Repository     string `json:"repository"`
	Number         int    `json:"number"`
	InstallationID int64  `json:"installation_id"`
	Key            string `json:"key"`
	User           string `json:"user"`
	// Check, when set, is the release whose ripcord/release check run's
	// Roll back button was clicked: the answer goes into that check run
	// (its note) instead of a comment.
	Check string `json:"check,omitempty"`
}

// answer gives body to who asked, in tx: a comment after the request's
// acknowledgement (Key), or the note of the check run whose button was
// clicked.
func answer(ctx context.Context, tx *sql.Tx, rc *river.Client[*sql.Tx], r *ReplyTo, body string) error {
	switch {
	case r == nil:
		return nil
	case r.Check != "":
		return queueNote(ctx, tx, rc, ReleaseCheckArgs{ReleaseID: r.Check, Note: "@" + r.User + ": " + body})
	}
	return commands.QueueReply(ctx, tx, rc, commands.ReplyArgs{Repository: r.Repository, Number: r.Number,
		InstallationID: r.InstallationID, Key: r.Key + "-done", Body: "@" + r.User + " " + body, After: r.Key})
}

// Kind names the job in the queue.
func (PullRequestArgs) Kind() string { return "rollback_pull_request" }

func argsFor(p Plan, reply *ReplyTo) PullRequestArgs {
	return PullRequestArgs{ReleaseID: p.Record.ReleaseID, Plan: p, Reply: reply}
}

type pullRequestWorker struct {
	river.WorkerDefaults[PullRequestArgs]
	deps  pipeline.Deps
	cache rollbackpr.BaseCache
}

func (w *pullRequestWorker) Timeout(*river.Job[PullRequestArgs]) time.Duration { return jobTimeout }

func (w *pullRequestWorker) Work(ctx context.Context, job *river.Job[PullRequestArgs]) error {
	err := w.work(ctx, job)
	if until, ok := limitedUntil(err, w.deps.Now()); ok && ctx.Err() == nil {
		return w.snoozeForLimit(ctx, job.Args, until, err)
	}
	var waits *river.JobSnoozeError
	if errors.As(err, &waits) {
		return err // another rollback opens a pull request on the branch (work)
	}
	var cancelled *river.JobCancelError
	if err == nil || job.Attempt < job.MaxAttempts || errors.As(err, &cancelled) {
		return err
	}
	// The last try failed, at whatever step (the release store, the
	// installation, its client, the default branch, the pull request, the
	// release record): say what failed, rather than let the job be dropped
	// unheard. The job's own context may be what ran out (its timeout), so
	// the answer gets one of its own.
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), giveUpTimeout)
	defer stop()
	a := job.Args
	why := fmt.Sprintf("gave up after %d attempts: %v", job.Attempt, err)
	var nr *notRecorded
	if errors.As(err, &nr) {
		// The pull request is open but its release cannot be stored.
		// It holds the environment, as its record would have, until it is
		// closed or merged: another target is not opened beside it.
		return w.giveUp(ctx, a, "pull request "+nr.url+" opened, but its release could not be recorded: "+why,
			"the rollback pull request "+nr.url+" was opened but could not be recorded: "+why,
			"The rollback pull request "+nr.url+" was opened but could not be recorded: "+why+".", nr)
	}
	return w.fail(ctx, a, why)
}

// giveUpTimeout bounds the answer of a job that gave up.
const giveUpTimeout = 30 * time.Second

// notRecorded is a rollback pull request opened whose release could not
// be stored.
type notRecorded struct {
	url    string
	number int
	err    error
}

func (e *notRecorded) Error() string { return e.err.Error() }
func (e *notRecorded) Unwrap() error { return e.err }

func (w *pullRequestWorker) work(ctx context.Context, job *river.Job[PullRequestArgs]) error {
	a, d := job.Args, w.deps
	req := a.Plan.Request
	// opened stores the release with its audit and reply in one
	// transaction: when the release is stored, an earlier run of this job
	// did all of it and only its completion was lost (the process died).
	// Opening again would find its pull request merged or closed since and
	// open a second one, or report the rollback failed.
	if rec, err := d.Records.Get(ctx, a.ReleaseID); err == nil {
		d.Log.Info("rollback release stored already: its pull request job has nothing left to do",
			"release_id", a.ReleaseID, "pull_request", rec.PRURL, "state", rec.State)
		return nil
	} else if !errors.Is(err, records.ErrNotFound) {
		return fmt.Errorf("read release %s: %w", a.ReleaseID, err)
	}
	inst, err := installationOf(ctx, d, req.Repository)
	var refused *Refused
	if errors.As(err, &refused) {
		return w.fail(ctx, a, refused.Reason)
	}
	if err != nil {
		return fmt.Errorf("installation of %s: %w", req.Repository, err)
	}
	gh, err := d.GitHub.NewInstallationClient(inst)
	if err != nil {
		return fmt.Errorf("github client for installation %d: %w", inst, err)
	}
	if req.Base == "" {
		owner, name, _ := strings.Cut(req.Repository, "/")
		repo, _, err := gh.Repositories.Get(ctx, owner, name)
		if err != nil {
			return fmt.Errorf("default branch of %s: %w", req.Repository, err)
		}
		req.Base = repo.GetDefaultBranch()
	}
	// Rollbacks to one commit of one environment share a branch name
	// (rollbackpr.BranchName): two apps of a monorepo, or two clusters.
	// Side by side, one created the branch and had not opened its pull
	// request yet when the other took the branch over as stale: both
	// records then named one pull request, which rolled back only one of
	// them. Open runs under a claim of the branch, so the second sees the
	// first's pull request and goes to a branch of its own.
	branch := "rollback-branch " + req.Repository + " " + rollbackpr.BranchName(req.Rollback.Environment, req.Rollback.GitRevision)
	release, held, err := d.Claim(ctx, branch, job.ID)
	if err != nil {
		return err
	}
	if !held {
		return river.JobSnooze(claimWait)
	}
	res, err := rollbackpr.Open(ctx, rollbackpr.NewGitHub(gh), w.cache, req)
	release()
	if errors.Is(err, rollbackpr.ErrNoChange) {
		return w.fail(ctx, a, fmt.Sprintf("%s on %s already has the target's values: the rollback is merged already, or the target is what runs", req.File, req.Base))
	}
	if rollbackpr.Permanent(err) {
		return w.fail(ctx, a, err.Error())
	}
	if err != nil {
		return err
	}
	d.Log.Info("rollback pull request open", "release_id", a.ReleaseID, "pull_request", res.URL,
		"branch", res.Branch, "outcome", res.PullRequestOutcome)
	if err := d.DB.InTx(ctx, func(tx *sql.Tx) error { return w.opened(ctx, tx, a, res, inst) }); err != nil {
		return &notRecorded{url: res.URL, number: res.PullRequest, err: err}
	}
	return nil
}

// opened stores the rollback release with its pull request, its audit
// event, and the reply. A retried job finds the record stored already.
// inst is the installation of the pull request's repository.
func (w *pullRequestWorker) opened(ctx context.Context, tx *sql.Tx, a PullRequestArgs, res rollbackpr.Result, inst int64) error {
	d := w.deps
	rec := a.Plan.Record
	rec.PRURL, rec.PRNumber = res.URL, res.PullRequest
	stored, events, err := d.Records.OpenRelease(ctx, tx, rec, d.Now())
	if err != nil {
		return fmt.Errorf("open rollback release %s: %w", rec.ReleaseID, err)
	}
	if len(events) == 0 {
		return nil // stored by an earlier attempt, with its audit and reply
	}
	// A job that gave up on this pull request left it holding the
	// environment; its release, stored now, holds it from here on.
	if err := releaseUnrecorded(ctx, tx, res.URL); err != nil {
		return err
	}
	if err := QueueReleaseChecks(ctx, tx, d.River(), []records.Record{stored}); err != nil {
		return err
	}
	if err := deployments.Queue(ctx, tx, d.River(), d.Log, []records.Record{stored}); err != nil {
		return err
	}
	// The rollout in waves of the release rolled back, if it is still going,
	// must not deploy that release to more targets.
	requester := ""
	if a.Reply != nil {
		requester = a.Reply.User
	}
	if err := rolloutflow.QueueStart(ctx, tx, d.River(), rolloutflow.StartArgs{ReleaseID: stored.ReleaseID, Author: requester}); err != nil {
		return err
	}
	msg := fmt.Sprintf("rollback of %s to %s (%s) opened as %s, pull request %s: %s",
		rec.RollbackOf, rollbackpr.ShortSHA(rec.GitRevision), rec.Image, rec.ReleaseID, res.URL, rec.RollbackReason)
	data := map[string]any{"rollback_release_id": rec.ReleaseID, "pull_request": res.URL,
		"branch": res.Branch, "commit": res.Commit, "repository": a.Plan.Request.Repository}
	hand := handCommits(res)
	if hand != "" {
		msg += "; " + hand
		data["hand_commits"], data["head"] = res.HandCommits, res.Head
	}
	err = d.Records.InsertAudit(ctx, tx, records.AuditEvent{Type: records.AuditRollbackInitiated, ReleaseID: rec.RollbackOf,
		At: d.Now(), Message: msg, Data: data})
	if err != nil {
		return err
	}
	body := fmt.Sprintf("Rollback pull request: %s (branch `%s`, release `%s`).", res.URL, res.Branch, rec.ReleaseID)
	if hand == "" {
		return w.reply(ctx, tx, a, body)
	}
	if err := w.reply(ctx, tx, a, body+" Its "+hand+": review them before merging."); err != nil {
		return err
	}
	// Reviewers of the pull request learn it there, however the rollback
	// was asked for.
	repo, number := pullRequestOf(stored, a.Plan.Request.Repository)
	return commands.QueueReply(ctx, tx, d.River(), commands.ReplyArgs{Repository: repo, Number: number, InstallationID: inst,
		Key: "hand-commits-" + rec.ReleaseID, Body: "This rollback's (release `" + rec.ReleaseID + "`) " + hand +
			": review them before merging, since merging deploys the release file as they leave it. " +
			"ripcord does not move a rollback branch whose pull request is open and has commits made by hand."})
}

// handCommits says, when res kept commits a person pushed on the rollback
// branch (rollbackpr keeps them on an open pull request), that they are
// there; it is empty when there are none.
func handCommits(res rollbackpr.Result) string {
	if res.HandCommits == 0 {
		return ""
	}
	commits := "commits"
	if res.HandCommits == 1 {
		commits = "commit"
	}
	return fmt.Sprintf("branch has %d %s made by hand on top of ripcord's rollback commit %s, which ripcord left in place "+
		"(head %s)", res.HandCommits, commits, rollbackpr.ShortSHA(res.Commit), rollbackpr.ShortSHA(res.Head))
}

// fail records why the pull request cannot be opened, answers, and stops
// the job: trying again would not change the answer.
func (w *pullRequestWorker) fail(ctx context.Context, a PullRequestArgs, why string) error {
	return w.giveUp(ctx, a, why, "the rollback pull request was not opened: "+why,
		"The rollback pull request was not opened: "+why+".", nil)
}

// giveUp ends the job with the rollback failed: it records audit on the
// release rolled back (rollback_failed), ends a recovery episode waiting
// for this rollback with reason, and answers who asked with reply. open,
// when set, is the pull request opened whose release was not stored: it
// holds the environment from now on (holdUnrecorded).
func (w *pullRequestWorker) giveUp(ctx context.Context, a PullRequestArgs, audit, reason, reply string, open *notRecorded) error {
	d := w.deps
	err := d.DB.InTx(ctx, func(tx *sql.Tx) error {
		if open != nil {
			if err := holdUnrecorded(ctx, tx, a, open.url, open.number, d.Now()); err != nil {
				return err
			}
		}
		err := d.Records.InsertAudit(ctx, tx, records.AuditEvent{Type: records.AuditRollbackFailed, ReleaseID: a.Plan.Record.RollbackOf,
			At: d.Now(), Message: fmt.Sprintf("rollback %s: %s", a.ReleaseID, audit),
			Data: map[string]any{"rollback_release_id": a.ReleaseID}})
		if err != nil {
			return err
		}
		// A recovery episode waiting for this rollback ends in rollback_failed.
		if err := recoveryflow.QueueRollbackFailed(ctx, tx, d.River(), a.ReleaseID, reason); err != nil {
			return err
		}
		return w.reply(ctx, tx, a, reply)
	})
	if err != nil {
		return err
	}
	return river.JobCancel(errors.New(audit))
}

func (w *pullRequestWorker) reply(ctx context.Context, tx *sql.Tx, a PullRequestArgs, body string) error {
	return answer(ctx, tx, w.deps.River(), a.Reply, body)
}
