package recoveryflow

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/store"
)

// claimWait is how long a check-run job waits while another job of the
// same episode is creating its check run.
const claimWait = time.Second

// CheckArgs renders an episode's ripcord/recovery check run as of Seq. The
// episode and Seq are the idempotency key; a job whose Seq is no longer the
// episode's does nothing, because the newer job shows the newer state.
type CheckArgs struct {
	Repository     string `json:"repository" river:"unique"`
	RunID          int64  `json:"run_id" river:"unique"`
	Seq            int    `json:"seq" river:"unique"`
	InstallationID int64  `json:"installation_id"`
}

// Kind names the job in the queue.
func (CheckArgs) Kind() string { return "recovery_check" }

type checkWorker struct {
	river.WorkerDefaults[CheckArgs]
	f *flow
}

func (w *checkWorker) Timeout(*river.Job[CheckArgs]) time.Duration { return jobTimeout }

// Work creates the episode's one check run, or updates it. Creation is
// claimed in the episode row first, so two jobs never create two runs, and a
// retried creation looks for the run an earlier attempt may have made.
// GitHub's rate limit is waited out (pipeline.LimitSnooze), counting no
// attempt.
func (w *checkWorker) Work(ctx context.Context, job *river.Job[CheckArgs]) error {
	err := w.work(ctx, job)
	if snooze := pipeline.LimitSnooze(ctx, w.f.deps, job.Kind, err); snooze != nil {
		return snooze
	}
	return err
}

func (w *checkWorker) work(ctx context.Context, job *river.Job[CheckArgs]) error {
	a, f := job.Args, w.f
	ep, ok, err := getEpisode(ctx, f.deps.DB.Write, a.Repository, a.RunID)
	if err != nil || !ok || ep.Seq > a.Seq {
		return err
	}
	gh, err := f.deps.GitHub.NewInstallationClient(a.InstallationID)
	if err != nil {
		return fmt.Errorf("github client for installation %d: %w", a.InstallationID, err)
	}
	// The episode can move on while this job writes it, and the job of
	// the newer state can write first: GitHub keeps the last write, which
	// would then show the older state for good. So the job reads the
	// episode again after writing and, while it has moved on, writes it as
	// it stands. Unless the newest state's own job has not started yet:
	// that job writes after this write, and showing its state twice would
	// tell a reviewer the same news twice.
	for range maxRewrites {
		if err := f.writeCheck(ctx, gh, ep, job); err != nil {
			return err
		}
		now, ok, err := getEpisode(ctx, f.deps.DB.Write, a.Repository, a.RunID)
		if err != nil || !ok || now.Seq == ep.Seq {
			return err
		}
		if waiting, err := f.checkJobWaiting(ctx, now); err != nil || waiting {
			return err
		}
		ep = now
	}
	return nil // still moving: the newest state's own job writes it too
}

// checkJobWaiting reports whether ep's own check-run job (of its Seq) is
// queued and not started: it will write after anything written so far.
// A running job may write before or after, so it does not count.
func (f *flow) checkJobWaiting(ctx context.Context, ep Episode) (bool, error) {
	arg := func(name string) string { return store.RiverJobArg(f.deps.DB.Dialect, name) }
	var n int
	err := f.deps.DB.Write.QueryRowContext(ctx, `SELECT COUNT(*) FROM river_job WHERE kind = $1
		AND state IN ('available', 'pending', 'retryable', 'scheduled')
		AND `+arg("repository")+` = $2 AND CAST(`+arg("run_id")+` AS BIGINT) = $3 AND CAST(`+arg("seq")+` AS BIGINT) = $4`,
		CheckArgs{}.Kind(), ep.Repository, ep.RunID, ep.Seq).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("check-run job of %s#%d at %d: %w", ep.Repository, ep.RunID, ep.Seq, err)
	}
	return n > 0, nil
}

// writeCheck shows ep on its check run: it creates the run, or updates it.
func (f *flow) writeCheck(ctx context.Context, gh *github.Client, ep Episode, job *river.Job[CheckArgs]) error {
	owner, repo, _ := strings.Cut(ep.Repository, "/")
	view := RenderCheck(ep)
	id := ep.CheckRunID
	if id != 0 && view.Status != "completed" {
		// GitHub does not set a completed check run back in progress (a
		// retry after the episode stopped, alerted or recovered): the
		// PATCH would leave "Stopped" showing while ripcord retries. A new
		// check run shows the episode from here.
		done, err := checkCompleted(ctx, gh, owner, repo, id)
		if err != nil {
			return err
		}
		if done {
			// Unless the episode moved on meanwhile: the run may have
			// been completed by the job of a later state, which a new
			// run would hide. The caller reads the episode again.
			if dropped, err := f.dropCheck(ctx, ep, id); err != nil || !dropped {
				return err
			}
			id = 0
		}
	}
	if id == 0 {
		claimed, existing, inherited, err := f.claimCheck(ctx, ep, job.ID)
		switch {
		case err != nil:
			return err
		case existing != 0:
			id = existing
		case !claimed:
			return river.JobSnooze(claimWait)
		default:
			return f.createCheck(ctx, gh, ep, view, job.Attempt > 1 || inherited)
		}
	}
	now := github.Timestamp{Time: f.deps.Now()}
	opts := github.UpdateCheckRunOptions{Name: CheckName, Status: &view.Status,
		Output: &github.CheckRunOutput{Title: &view.Title, Summary: &view.Summary}}
	if view.Status == "completed" {
		opts.Conclusion, opts.CompletedAt = &view.Conclusion, &now
	}
	// Setting the same content twice does no harm, so the PATCH may be retried.
	if _, _, err := gh.Checks.UpdateCheckRun(ghclient.Idempotent(ctx), owner, repo, id, opts); err != nil {
		return fmt.Errorf("update %s %d on %s: %w", CheckName, id, ep.Repository, err)
	}
	f.metrics.effects.WithLabelValues("check_run", "done").Inc()
	return nil
}

// checkCompleted reports whether check run id is completed on GitHub.
func checkCompleted(ctx context.Context, gh *github.Client, owner, repo string, id int64) (bool, error) {
	cr, _, err := gh.Checks.GetCheckRun(ctx, owner, repo, id)
	if err != nil {
		return false, fmt.Errorf("read %s %d on %s/%s: %w", CheckName, id, owner, repo, err)
	}
	return cr.GetStatus() == "completed", nil
}

// dropCheck forgets the episode's completed check run id, so that the
// next one is created (and claimed) as the first was; it drops nothing
// (false) once the episode moved on from ep.
func (f *flow) dropCheck(ctx context.Context, ep Episode, id int64) (bool, error) {
	res, err := f.deps.DB.Write.ExecContext(ctx, `UPDATE episodes SET check_run_id = 0, check_claim = 0
		WHERE repository = $1 AND run_id = $2 AND check_run_id = $3 AND seq = $4`, ep.Repository, ep.RunID, id, ep.Seq)
	if err != nil {
		return false, fmt.Errorf("replace completed check run %d of %s#%d: %w", id, ep.Repository, ep.RunID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("replace completed check run %d of %s#%d: %w", id, ep.Repository, ep.RunID, err)
	}
	return n == 1, nil
}

// checkKey is the external id of the check run created for the episode as
// it is now: the run's key, and from the second attempt on the attempt
// too. A check run is created again only for a later attempt (the one
// before it was completed), so a retried creation never takes the
// completed run for the one it made.
func checkKey(ep Episode) string {
	key := RunKey(ep.Repository, ep.RunID)
	if ep.RunAttempt > 1 {
		key += fmt.Sprintf("/attempt-%d", ep.RunAttempt)
	}
	return key
}

func (f *flow) createCheck(ctx context.Context, gh *github.Client, ep Episode, view CheckView, retried bool) error {
	owner, repo, _ := strings.Cut(ep.Repository, "/")
	key := checkKey(ep)
	if retried {
		id, err := findCheck(ctx, gh, f.deps.App().ID, owner, repo, ep.HeadSHA, RunKey(ep.Repository, ep.RunID), key)
		if err != nil {
			return err
		}
		if id != 0 {
			return f.storeCheck(ctx, ep, id)
		}
	}
	now := github.Timestamp{Time: f.deps.Now()}
	opts := github.CreateCheckRunOptions{Name: CheckName, HeadSHA: ep.HeadSHA, ExternalID: &key, Status: &view.Status,
		StartedAt: &now, Output: &github.CheckRunOutput{Title: &view.Title, Summary: &view.Summary}}
	if view.Status == "completed" {
		opts.Conclusion, opts.CompletedAt = &view.Conclusion, &now
	}
	cr, _, err := gh.Checks.CreateCheckRun(ctx, owner, repo, opts)
	if err != nil {
		return fmt.Errorf("create %s on %s@%s: %w", CheckName, ep.Repository, ep.HeadSHA, err)
	}
	f.metrics.effects.WithLabelValues("check_run", "done").Inc()
	return f.storeCheck(ctx, ep, cr.GetID())
}

// findCheck looks for the episode's check run among the runs this App
// (appID) made: a workflow's token or another App can make a run of the
// same name and external id, and storing its id would have every later
// update refused by GitHub. The run is the one of external id key or,
// when the episode moved to a later attempt since the creation was
// tried, one of another attempt of the episode's (its external id is base,
// or base/attempt-N) that is not completed: a completed one is a run the
// episode left behind for a new one.
func findCheck(ctx context.Context, gh *github.Client, appID int64, owner, repo, sha, base, key string) (int64, error) {
	name, all := CheckName, "all"
	list, _, err := gh.Checks.ListCheckRunsForRef(ctx, owner, repo, sha, &github.ListCheckRunsOptions{CheckName: &name, Filter: &all,
		AppID: &appID, ListOptions: github.ListOptions{PerPage: 100}})
	if err != nil {
		return 0, fmt.Errorf("look for %s of %s on %s/%s@%s: %w", CheckName, key, owner, repo, sha, err)
	}
	var open int64
	for _, cr := range list.CheckRuns {
		if cr.GetApp().GetID() != appID {
			continue
		}
		id := cr.GetExternalID()
		switch {
		case id == key:
			return cr.GetID(), nil
		case open == 0 && cr.GetStatus() != "completed" && (id == base || strings.HasPrefix(id, base+"/attempt-")):
			open = cr.GetID()
		}
	}
	return open, nil
}

// claimCheck claims the creation of the episode's check run for job, or
// returns the id another job stored meanwhile. A claim whose job is gone
// (River gave up on it) is taken over, inherited: that job may have created
// the check run.
func (f *flow) claimCheck(ctx context.Context, ep Episode, job int64) (claimed bool, id int64, inherited bool, err error) {
	if claimed, err = f.setCheckClaim(ctx, ep, job, 0, job); err != nil || claimed {
		return claimed, 0, false, err
	}
	var claim int64
	err = f.deps.DB.Write.QueryRowContext(ctx, `SELECT check_run_id, check_claim FROM episodes WHERE repository = $1 AND run_id = $2`,
		ep.Repository, ep.RunID).Scan(&id, &claim)
	if err != nil || id != 0 {
		if err != nil {
			err = fmt.Errorf("read the check run of %s#%d: %w", ep.Repository, ep.RunID, err)
		}
		return false, id, false, err
	}
	if gone, err := f.deps.JobGone(ctx, claim); err != nil || !gone {
		return false, 0, false, err
	}
	claimed, err = f.setCheckClaim(ctx, ep, job, claim, claim)
	return claimed, 0, true, err
}

// setCheckClaim claims the check run's creation for job while no check run
// is stored and the claim is either of a or b.
func (f *flow) setCheckClaim(ctx context.Context, ep Episode, job, a, b int64) (bool, error) {
	res, err := f.deps.DB.Write.ExecContext(ctx, `UPDATE episodes SET check_claim = $3
		WHERE repository = $1 AND run_id = $2 AND check_run_id = 0 AND check_claim IN ($4, $5)`, ep.Repository, ep.RunID, job, a, b)
	if err != nil {
		return false, fmt.Errorf("claim the check run of %s#%d: %w", ep.Repository, ep.RunID, err)
	}
	n, err := res.RowsAffected()
	return err == nil && n == 1, nil
}

func (f *flow) storeCheck(ctx context.Context, ep Episode, id int64) error {
	_, err := f.deps.DB.Write.ExecContext(ctx, `UPDATE episodes SET check_run_id = $3 WHERE repository = $1 AND run_id = $2`,
		ep.Repository, ep.RunID, id)
	if err != nil {
		return fmt.Errorf("store check run %d of %s#%d: %w", id, ep.Repository, ep.RunID, err)
	}
	return nil
}
