package rolloutflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/gates"
	"github.com/ripcord/ripcord/records"
)

// mergeHandler starts rollouts when a release pull request is merged: one
// that changes the release file (rollback.file) of an environment with
// `rollout:`. Which files changed needs GitHub reads, so a job decides.
type mergeHandler struct{ x *executor }

func (mergeHandler) Handles() []string { return []string{"pull_request"} }

func (h mergeHandler) Handle(_ context.Context, d pipeline.Delivery) (pipeline.Commit, error) {
	var ev github.PullRequestEvent
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		return nil, pipeline.Permanent(fmt.Errorf("decode pull_request event: %w", err))
	}
	pr := ev.GetPullRequest()
	if ev.GetAction() != "closed" || !pr.GetMerged() || d.InstallationID == 0 || pr.GetMergeCommitSHA() == "" {
		return nil, nil
	}
	a := MergeArgs{Repository: ev.GetRepo().GetFullName(), PullRequest: ev.GetNumber(), URL: pr.GetHTMLURL(), MergeSHA: pr.GetMergeCommitSHA(),
		BaseSHA: pr.GetBase().GetSHA(), MergedAt: pr.GetMergedAt().Time, InstallationID: d.InstallationID,
		Authors: joinLogins(pr.GetUser().GetLogin(), pr.GetMergedBy().GetLogin())}
	return func(ctx context.Context, tx *sql.Tx) error {
		_, err := h.x.deps.River().InsertTx(ctx, tx, a, &river.InsertOpts{MaxAttempts: 10,
			UniqueOpts: river.UniqueOpts{ByArgs: true}})
		return err
	}, nil
}

// joinLogins lists the people who may not approve, without repeats.
func joinLogins(logins ...string) string {
	var out []string
	for _, l := range logins {
		if l != "" && !isAuthor(strings.Join(out, ","), l) {
			out = append(out, l)
		}
	}
	return strings.Join(out, ",")
}

// isAuthor reports whether login is one of authors (comma-separated).
func isAuthor(authors, login string) bool {
	for _, a := range strings.Split(authors, ",") {
		if a != "" && strings.EqualFold(a, login) {
			return true
		}
	}
	return false
}

// MergeArgs is one merged pull request that may be a release.
type MergeArgs struct {
	Repository     string `json:"repository" river:"unique"`
	PullRequest    int    `json:"pull_request" river:"unique"`
	URL            string `json:"url"` // the pull request's html_url; "" in jobs queued before it was added
	MergeSHA       string `json:"merge_sha"`
	BaseSHA        string `json:"base_sha"`
	InstallationID int64  `json:"installation_id"`
	Authors        string `json:"authors"` // the PR's author and merger
	// MergedAt is the pull request's merged_at; zero in jobs queued before
	// it was added, which take the time the job runs.
	MergedAt time.Time `json:"merged_at"`
}

// Kind names the job in the queue.
func (MergeArgs) Kind() string { return "rollout_merge" }

type mergeWorker struct {
	river.WorkerDefaults[MergeArgs]
	x      *executor
	loader *configload.Loader
}

func (w *mergeWorker) Timeout(*river.Job[MergeArgs]) time.Duration { return 2 * time.Minute }

// Work opens a release for each environment with `rollout:` whose release
// file the merge changed, and starts its rollout. When the pull request is
// a rollback pull request of the environment (its rollback release names
// it), it starts the rollout of that rollback release instead.
func (w *mergeWorker) Work(ctx context.Context, job *river.Job[MergeArgs]) error {
	a, x := job.Args, w.x
	gh, err := x.deps.GitHub.NewInstallationClient(a.InstallationID)
	if err != nil {
		return fmt.Errorf("github client for installation %d: %w", a.InstallationID, err)
	}
	cfg, err := w.loader.Load(ctx, gh.Repositories, a.Repository, "")
	if err != nil || !cfg.Valid() {
		return err // no config, or one that does not load: no rollout to start
	}
	for _, app := range cfg.Config.AppNames() {
		for _, name := range cfg.Config.Apps[app].EnvironmentNames() {
			env := cfg.Config.Apps[app].Environments[name]
			rb := env.Rollback
			if env.Plan == nil || rb.File == "" || (rb.Repository != "" && rb.Repository != a.Repository) {
				continue
			}
			head, err := ghclient.FileAt(ctx, gh, a.Repository, rb.File, a.MergeSHA)
			if err != nil {
				return err
			}
			base, err := ghclient.FileAt(ctx, gh, a.Repository, rb.File, a.BaseSHA)
			if err != nil {
				return err
			}
			if head == nil || !gates.ChangesRelease(base, head, rb.Fields) {
				continue
			}
			// A rollback pull request that ripcord opened has its release
			// already: that one is deployed, not a promote beside it.
			rollback, err := rollbackOfPullRequest(ctx, x.deps.DB.Read, a, app, name, env.Cluster)
			if err != nil {
				return err
			}
			if rollback != "" {
				if err := x.startMergedRollback(ctx, w.loader, rollback, a); err != nil {
					return err
				}
				continue
			}
			// An app's environment belongs to the repository of its first
			// release (README, POST /api/v1/facts): another repository's
			// config declaring the same app does not make its merges releases.
			owner, err := x.deps.Records.Owner(ctx, app, name)
			if err != nil {
				return err
			}
			if owner != "" && !strings.EqualFold(owner, a.Repository) {
				x.deps.Log.Warn("merged pull request changes the release file of an app another repository owns: no release opened",
					"repository", a.Repository, "pull_request", a.PullRequest, "app", app, "environment", name, "owner", owner)
				continue
			}
			rel, err := gates.ReadRelease(head, rb.Fields)
			if err != nil {
				x.deps.Log.Warn("release file of a merged pull request does not read", "repository", a.Repository,
					"pull_request", a.PullRequest, "file", rb.File, "error", err)
				continue
			}
			rec := records.Record{ReleaseID: rel.ReleaseID, App: app, Environment: name, Cluster: env.Cluster,
				Repository: a.Repository, Image: rel.Image, Digest: rel.Digest, GitRevision: a.MergeSHA,
				Kind: records.KindPromote, PRNumber: a.PullRequest}
			if rec.ReleaseID == "" {
				rec.ReleaseID = fmt.Sprintf("%s#%d:%s/%s", a.Repository, a.PullRequest, env.Cluster, name)
			}
			if err := x.openAndStart(ctx, rec, a.Authors, a.MergedAt); err != nil {
				return err
			}
		}
	}
	return nil
}

// openAndStart opens rec (idempotent), records that its pull request was
// merged at mergedAt (which starts its stall clock: the release was opened
// at the merge, after the pull_request handler recorded it on the releases
// that existed), and queues its rollout's start.
func (x *executor) openAndStart(ctx context.Context, rec records.Record, authors string, mergedAt time.Time) error {
	if mergedAt.IsZero() {
		mergedAt = x.deps.Now()
	}
	return x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		opened, _, err := x.deps.Records.OpenRelease(ctx, tx, rec, x.deps.Now())
		if err != nil {
			return fmt.Errorf("open release %s: %w", rec.ReleaseID, err)
		}
		if _, err := x.deps.Records.MarkMerged(ctx, tx, rec.Repository, rec.PRURL, rec.PRNumber, mergedAt); err != nil {
			return err
		}
		return QueueStart(ctx, tx, x.deps.River(), StartArgs{ReleaseID: opened.ReleaseID, Author: authors})
	})
}

// rollbackOfPullRequest is the rollback release of app in environment and
// cluster that was opened for the merged pull request a (the repository,
// whose config names the environment and holds its release file, and the
// number; its pr_url when both are known), "" when there is none.
func rollbackOfPullRequest(ctx context.Context, db *sql.DB, a MergeArgs, app, environment, cluster string) (string, error) {
	var id string
	err := db.QueryRowContext(ctx, `SELECT release_id FROM records WHERE kind = $1 AND pr_number = $2
		AND lower(repository) = lower($3) AND app = $4 AND environment = $5 AND cluster = $6
		AND ($7 = '' OR pr_url = '' OR pr_url = $7)
		ORDER BY created_at DESC, release_id DESC LIMIT 1`,
		string(records.KindRollback), a.PullRequest, a.Repository, app, environment, cluster, a.URL).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("rollback release of %s#%d: %w", a.Repository, a.PullRequest, err)
	}
	return id, nil
}

// startMergedRollback starts the rollout of the rollback release whose
// pull request a merged (idempotent: a rollout started already is kept).
func (x *executor) startMergedRollback(ctx context.Context, loader *configload.Loader, releaseID string, a MergeArgs) error {
	mergedAt := a.MergedAt
	if mergedAt.IsZero() {
		mergedAt = x.deps.Now()
	}
	rec, err := x.deps.Records.Get(ctx, releaseID)
	if err != nil {
		return fmt.Errorf("rollback release %s: %w", releaseID, err)
	}
	// The pull_request handler marked it merged already, unless it missed
	// the release; marking keeps the first time.
	err = x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		_, err := x.deps.Records.MarkMerged(ctx, tx, a.Repository, rec.PRURL, rec.PRNumber, mergedAt)
		return err
	})
	if err != nil {
		return err
	}
	_, err = x.startMerged(ctx, loader, StartArgs{ReleaseID: releaseID, Author: a.Authors}, a.MergeSHA)
	if errors.Is(err, errNoRollout) {
		return nil
	}
	return err
}
