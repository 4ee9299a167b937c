package configload

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
)

// checkAttempts bounds the retries of one check-run job.
const checkAttempts = 6

// CheckArgs reports a commit's config as the ripcord/config check run. The
// repository and commit are the idempotency key: River refuses a second job
// for them, so a redelivered push never makes a second check run.
type CheckArgs struct {
	Repository     string `json:"repository" river:"unique"`
	HeadSHA        string `json:"head_sha" river:"unique"`
	InstallationID int64  `json:"installation_id"`
}

// Kind names the job in the queue.
func (CheckArgs) Kind() string { return "config_check" }

// QueueCheck queues the check of a commit's config in the caller's
// transaction; other capabilities use it when they meet a config that does
// not load.
func QueueCheck(ctx context.Context, tx *sql.Tx, rc *river.Client[*sql.Tx], args CheckArgs) error {
	_, err := rc.InsertTx(ctx, tx, args, &river.InsertOpts{MaxAttempts: checkAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true}})
	if err != nil {
		return fmt.Errorf("queue %s check of %s@%s: %w", CheckName, args.Repository, args.HeadSHA, err)
	}
	return nil
}

type checkWorker struct {
	river.WorkerDefaults[CheckArgs]
	deps   pipeline.Deps
	loader *Loader
}

func (w *checkWorker) Work(ctx context.Context, job *river.Job[CheckArgs]) error {
	err := w.work(ctx, job)
	if snooze := pipeline.LimitSnooze(ctx, w.deps, job.Kind, err); snooze != nil {
		return snooze
	}
	return err
}

func (w *checkWorker) work(ctx context.Context, job *river.Job[CheckArgs]) error {
	a := job.Args
	gh, err := w.deps.GitHub.NewInstallationClient(a.InstallationID)
	if err != nil {
		return fmt.Errorf("github client for installation %d: %w", a.InstallationID, err)
	}
	res, err := w.loader.Load(ctx, gh.Repositories, a.Repository, a.HeadSHA)
	if err != nil {
		return err
	}
	if !res.Found {
		return nil // removed again within the same push: nothing to report on
	}
	out := RenderCheck(res)
	owner, repo := splitRepo(a.Repository)
	existing := int64(0)
	if job.Attempt > 1 {
		// An earlier attempt may have created the run before failing.
		if existing, err = findCheckRun(ctx, gh, w.deps.App().ID, owner, repo, a.HeadSHA, CheckName); err != nil {
			return err
		}
	}
	now := github.Timestamp{Time: w.deps.Now()}
	output := &github.CheckRunOutput{Title: &out.Title, Summary: &out.Summary, Annotations: out.Annotations}
	if existing != 0 {
		// A PATCH that sets the same content twice does no harm.
		_, _, err = gh.Checks.UpdateCheckRun(ghclient.Idempotent(ctx), owner, repo, existing, github.UpdateCheckRunOptions{
			Name: CheckName, Status: github.String("completed"), Conclusion: &out.Conclusion, CompletedAt: &now, Output: output,
		})
	} else {
		_, _, err = gh.Checks.CreateCheckRun(ctx, owner, repo, github.CreateCheckRunOptions{
			Name: CheckName, HeadSHA: a.HeadSHA, Status: github.String("completed"), Conclusion: &out.Conclusion,
			CompletedAt: &now, Output: output, DetailsURL: detailsURL(w.deps),
		})
	}
	if err != nil {
		return fmt.Errorf("report %s on %s@%s: %w", CheckName, a.Repository, a.HeadSHA, err)
	}
	w.deps.Log.Info("reported config check", "repository", a.Repository, "head_sha", a.HeadSHA, "conclusion", out.Conclusion)
	return nil
}

func (w *checkWorker) Timeout(*river.Job[CheckArgs]) time.Duration { return time.Minute }

// findCheckRun returns the id of the newest check run named name on sha
// that this App (appID) made, or 0. A workflow that runs `ripcord validate`
// (or another App) can make a run of the same name; GitHub refuses every
// update of it, so taking it would fail the job on each attempt and leave
// the commit without ripcord's own verdict.
func findCheckRun(ctx context.Context, gh *github.Client, appID int64, owner, repo, sha, name string) (int64, error) {
	list, _, err := gh.Checks.ListCheckRunsForRef(ctx, owner, repo, sha, &github.ListCheckRunsOptions{CheckName: &name, AppID: &appID})
	if err != nil {
		return 0, fmt.Errorf("look for %s on %s/%s@%s: %w", name, owner, repo, sha, err)
	}
	for _, cr := range list.CheckRuns {
		if cr.GetApp().GetID() == appID {
			return cr.GetID(), nil
		}
	}
	return 0, nil
}

// detailsURL points the check at the server's validate docs when the public
// URL is known; GitHub rejects a details_url that is not http(s).
func detailsURL(d pipeline.Deps) *string {
	if d.Config == nil || d.Config.PublicURL == "" {
		return nil
	}
	u := d.Config.PublicURL
	return &u
}
