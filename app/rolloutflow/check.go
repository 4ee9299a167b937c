package rolloutflow

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/internal/ghlimit"
	"github.com/ripcord/ripcord/internal/mdtext"
	"github.com/ripcord/ripcord/rollout/status"
)

// CheckName is the check run that shows a rollout on its release's commit.
const CheckName = "ripcord/rollout"

// ApproveAction is the identifier of the check run's Approve button.
const ApproveAction = "approve"

// CheckArgs writes a rollout's check run as the rollout stands when the
// job runs, so a burst of moves costs one or two writes.
type CheckArgs struct {
	RolloutID string `json:"rollout_id"`
}

// Kind names the job in the queue.
func (CheckArgs) Kind() string { return "rollout_check" }

func queueCheck(ctx context.Context, tx *sql.Tx, rc *river.Client[*sql.Tx], id string) error {
	_, err := rc.InsertTx(ctx, tx, CheckArgs{RolloutID: id}, &river.InsertOpts{MaxAttempts: 10})
	if err != nil {
		return fmt.Errorf("queue check run of rollout %s: %w", id, err)
	}
	return nil
}

type checkWorker struct {
	river.WorkerDefaults[CheckArgs]
	x *executor
}

func (w *checkWorker) Timeout(*river.Job[CheckArgs]) time.Duration { return time.Minute }

func (w *checkWorker) Work(ctx context.Context, job *river.Job[CheckArgs]) error {
	x := w.x
	r, err := getRollout(ctx, x.deps.DB.Read, job.Args.RolloutID)
	if err != nil || r.HeadSHA == "" {
		return err // no commit to show it on
	}
	inst, err := rolloutInstallation(ctx, x.deps.DB.Read, r.ID)
	if err != nil || !inst.installed {
		// The App was uninstalled from the repository: no check run can
		// be written there, now or later (uninstalled.go).
		return err
	}
	if inst.suspended {
		// Refused now, written once the installation is unsuspended
		// (suspended.go).
		return x.waitSuspended(r.ID, inst.id)
	}
	lim, err := readLimit(ctx, x.deps.DB.Read, r.InstallationID)
	if err != nil {
		return err
	}
	if lim.holds(x.deps.Now()) {
		// The installation's rate limit, met by a request of a rollout
		// (this one's or another's) or by this job, has not reset: the
		// write would be spent against it (ratewait.go).
		x.deps.Log.Warn("rollout check run not written: GitHub's rate limit; written after its reset", "rollout", r.ID,
			"installation", r.InstallationID, "until", lim.reset.UTC().Format(time.RFC3339))
		return river.JobSnooze(ghlimit.Snooze(lim.reset, x.deps.Now()))
	}
	gh, err := x.deps.GitHub.NewInstallationClient(r.InstallationID)
	if err != nil {
		return fmt.Errorf("github client for installation %d: %w", r.InstallationID, err)
	}
	err = x.writeCheck(ctx, gh, r, job.ID)
	if err == nil && !lim.reset.IsZero() {
		// Written after the reset of a limit met before: the episode
		// is over.
		return x.limitLifted(ctx, r.InstallationID)
	}
	if err == nil || ctx.Err() != nil {
		return err
	}
	if until, ok := rateLimited(err, x.deps.Now()); ok {
		// GitHub said "later" (on the check run, or on the
		// installation's token), not "no": retried with backoff the job
		// would spend its attempts against the limit, and end discarded
		// if it outlasts them. It waits for the reset instead (a snooze
		// costs no attempt), and writes the rollout as it stands then.
		return x.checkLimited(ctx, r, until, "rollout check run not written: GitHub's rate limit; written after its reset", err)
	}
	// The App lost access (the installation was deleted or suspended, the
	// repository removed from it), or GitHub did not answer for a token:
	// nothing is wrong with the check run, and retried with backoff the
	// job would run out of attempts and end failed, leaving the check run
	// as it was. It waits for the next poll instead (a snooze costs no
	// attempt), and writes the rollout as it stands then.
	tokenless, terr := x.noToken(ctx, r, err, func(why string) string {
		return fmt.Sprintf("%s check run not written: %s: it is written once access is back", CheckName, why)
	})
	if terr == nil && !tokenless && notFound(err) {
		tokenless, terr = x.checkAccessLost(ctx, gh, r)
	}
	if terr != nil {
		return terr
	}
	if tokenless {
		return river.JobSnooze(runPoll)
	}
	return err
}

// checkAccessLost reports, after a 404 on the check run, whether the App
// can no longer read the repository, and then says so once in the audit.
// GitHub's rate limit on the repository says nothing yet: the job snoozes
// until the reset (the error is river's snooze), as for a rate limit on
// the check run, rather than be retried with backoff, each try spending an
// attempt against a limit that has not reset.
func (x *executor) checkAccessLost(ctx context.Context, gh *github.Client, r Rollout) (bool, error) {
	owner, repo, _ := strings.Cut(r.Repository, "/")
	lost, err := x.accessLost(ctx, gh, owner, repo)
	if until, ok := rateLimited(err, x.deps.Now()); ok && ctx.Err() == nil {
		return false, x.checkLimited(ctx, r, until,
			"rollout check run not written: 404, and GitHub's rate limit on its repository; tried again after the reset", err)
	}
	if err != nil || !lost {
		return false, nil // the 404 stands as the job's error
	}
	x.deps.Log.Warn("rollout check run not written: no access to its repository", "rollout", r.ID, "repository", r.Repository)
	msg := fmt.Sprintf("%s check run not written: GitHub answers 404 on it and on %s, which the App can no longer read "+
		"(removed from the installation?): it is written once access is back", CheckName, r.Repository)
	return true, x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		return auditOnce(ctx, tx, r.ID, x.deps.Now(), "access-lost", msg)
	})
}

// checkLimited stores the installation's rate limit the check run job
// met, until when GitHub said to wait, so that the rollouts of the
// installation wait for the reset too (ratewait.go), and snoozes the job
// until then; only the log says so (msg), since no run or batch waits for
// the check run.
func (x *executor) checkLimited(ctx context.Context, r Rollout, until time.Time, msg string, cause error) error {
	x.deps.Log.Warn(msg, "rollout", r.ID, "installation", r.InstallationID, "until", until.UTC().Format(time.RFC3339), "error", cause)
	err := x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		_, err := storeLimit(ctx, tx, r.InstallationID, x.deps.Now(), until)
		return err
	})
	if err != nil {
		return err
	}
	return river.JobSnooze(ghlimit.Snooze(until, x.deps.Now()))
}

// Writing a rollout's check run while check-run jobs of the rollout run
// side by side (every move queues one).
const (
	// claimWait is how long a job waits while another job of the same
	// rollout creates its check run.
	claimWait = time.Second
	// maxRewrites bounds the writes of one job that finds the rollout
	// moved on after each, before it waits a moment (claimWait).
	maxRewrites = 5
)

// writeCheck shows the rollout on its check run as it stands. The rollout
// can move on while a job writes, and the job of the newer move can write
// first: GitHub keeps the last write, which would show the older state for
// good. So the job reads the rollout again after writing, and writes again
// while what it shows has changed.
func (x *executor) writeCheck(ctx context.Context, gh *github.Client, r Rollout, job int64) error {
	runs, err := listDispatched(ctx, x.deps.DB.Read, r.ID)
	if err != nil {
		return err
	}
	for range maxRewrites {
		v := checkView(r, runs)
		moved, err := x.writeView(ctx, gh, r, v, job)
		if err != nil {
			return err
		}
		if r, err = getRollout(ctx, x.deps.DB.Read, r.ID); err != nil {
			return err
		}
		if runs, err = listDispatched(ctx, x.deps.DB.Read, r.ID); err != nil {
			return err
		}
		if !moved && reflect.DeepEqual(checkView(r, runs), v) {
			return nil
		}
	}
	// Moving all the while: written again shortly, as it stands then, so
	// a creation the moves kept losing is not left undone.
	return river.JobSnooze(claimWait)
}

// writeView creates or updates the rollout's check run to show v. It
// writes nothing (moved) when it would create a run but the rollout moved
// on from r: another job stored a run, or the rollout changed.
func (x *executor) writeView(ctx context.Context, gh *github.Client, r Rollout, v view, job int64) (moved bool, err error) {
	owner, repo, _ := strings.Cut(r.Repository, "/")
	now := github.Timestamp{Time: x.deps.Now()}
	if r.CheckRunID != 0 {
		reopen, err := x.reopens(ctx, gh, owner, repo, r.CheckRunID, v.state)
		if err != nil || !reopen {
			return false, x.updateCheck(ctx, gh, owner, repo, r, v, now, err)
		}
	}
	// Creations are claimed (pipeline.Deps.Claim): two jobs that found no
	// run would each create one, and the one not stored would stay in
	// progress for good. Under the claim, a run stored meanwhile or a move
	// sends the caller back to read the rollout again.
	release, held, err := x.deps.Claim(ctx, "rollout-check "+r.ID, job)
	if err != nil {
		return false, err
	}
	if !held {
		return false, river.JobSnooze(claimWait)
	}
	defer release()
	if cur, err := getRollout(ctx, x.deps.DB.Write, r.ID); err != nil || cur.CheckRunID != r.CheckRunID || cur.Seq != r.Seq {
		return err == nil, err
	}
	opts := github.CreateCheckRunOptions{Name: CheckName, HeadSHA: r.HeadSHA, ExternalID: &v.externalID, Status: &v.state,
		StartedAt: &now, Output: v.output, Actions: v.actions}
	if v.state == "completed" {
		opts.Conclusion, opts.CompletedAt = &v.conclusion, &now
	}
	cr, _, err := gh.Checks.CreateCheckRun(ctx, owner, repo, opts)
	if err != nil {
		return false, fmt.Errorf("create %s of rollout %s: %w", CheckName, r.ID, err)
	}
	_, err = x.deps.DB.Write.ExecContext(ctx, `UPDATE rollouts SET check_run_id = $1 WHERE id = $2 AND check_run_id = $3`,
		cr.GetID(), r.ID, r.CheckRunID)
	if err != nil {
		return false, fmt.Errorf("store %s %d of rollout %s: %w", CheckName, cr.GetID(), r.ID, err)
	}
	return false, nil
}

// view is what the check run shows. Its external id names the pause the
// Approve button is shown for (checkExternalID), which GitHub echoes in a
// click's payload.
type view struct {
	state, conclusion, externalID string
	output                        *github.CheckRunOutput
	actions                       []*github.CheckRunAction
}

func checkView(r Rollout, runs []Dispatched) view {
	st := statusOf(r, runs, nil)
	state, conclusion := checkState(r.Machine.Status)
	title := fmt.Sprintf("%s: %s stages passed", r.Machine.Status, st.RolloutProgress)
	switch {
	case r.Machine.Status == PausedQueue:
		title = fmt.Sprintf("%s: waits for %s to end", r.Machine.Status, r.Machine.Paused)
	case r.Machine.Status == PausedHold, r.Machine.Phase == PhaseDrain:
		title = fmt.Sprintf("%s: %s", r.Machine.Status, r.Machine.Paused)
	case st.Rollout.Stage != "":
		title += ", stage " + st.Rollout.Stage
	}
	// The release id and version are free text from the API: in code
	// spans they cannot mention anyone or link anywhere.
	summary := fmt.Sprintf("Rollout %s of release %s (%s).\n\n",
		mdtext.CodeSpan(r.ID), mdtext.CodeSpan(r.ReleaseID), mdtext.CodeSpan(r.Version))
	if h := r.Snapshot.HeadFrom; h != "" && h != HeadFromRelease {
		summary += fmt.Sprintf("Shown on `%s`: %s.\n\n", r.HeadSHA, h)
	}
	summary += status.Summary(st.Status)
	v := view{state: state, conclusion: conclusion, externalID: checkExternalID(r),
		output: &github.CheckRunOutput{Title: &title, Summary: &summary}}
	switch r.Machine.Status {
	case PausedApproval:
		v.actions = []*github.CheckRunAction{{Label: "Approve", Identifier: ApproveAction, Description: "Start the next wave"}}
	case PausedHold:
		v.actions = []*github.CheckRunAction{{Label: "Approve", Identifier: ApproveAction, Description: "Lift the hold: start the rollout"}}
	}
	return v
}

// reopens reports whether the rollout runs again after its check run was
// completed (the wait for approval): a completed check run is not set back
// to in_progress, a new one is created.
func (x *executor) reopens(ctx context.Context, gh *github.Client, owner, repo string, id int64, state string) (bool, error) {
	if state == "completed" {
		return false, nil
	}
	cr, _, err := gh.Checks.GetCheckRun(ctx, owner, repo, id)
	if err != nil {
		return false, fmt.Errorf("read %s %d: %w", CheckName, id, err)
	}
	return cr.GetStatus() == "completed", nil
}

func (x *executor) updateCheck(ctx context.Context, gh *github.Client, owner, repo string, r Rollout, v view, now github.Timestamp, err error) error {
	if err != nil {
		return err
	}
	opts := github.UpdateCheckRunOptions{Name: CheckName, ExternalID: &v.externalID, Status: &v.state, Output: v.output, Actions: v.actions}
	if v.state == "completed" {
		opts.Conclusion, opts.CompletedAt = &v.conclusion, &now
	}
	if _, _, err := gh.Checks.UpdateCheckRun(ghclient.Idempotent(ctx), owner, repo, r.CheckRunID, opts); err != nil {
		return fmt.Errorf("update %s of rollout %s: %w", CheckName, r.ID, err)
	}
	return nil
}

// checkState is the check run's status and conclusion for a rollout: a
// wait for approval, or a hold, is action_required, so the Approve button
// shows; a rollout waiting behind an older one is queued.
func checkState(s Status) (string, string) {
	switch s {
	case PausedQueue:
		return "queued", ""
	case PausedApproval, PausedHold:
		return "completed", "action_required"
	case Succeeded:
		return "completed", "success"
	case Failed:
		return "completed", "failure"
	}
	return "in_progress", ""
}
