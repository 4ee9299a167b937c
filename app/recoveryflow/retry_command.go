package recoveryflow

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/commands"
	"github.com/ripcord/ripcord/app/pipeline"
)

// RetryCommand is /ripcord retry: re-run the failed jobs of the latest
// failed run of a configured deploy workflow on the pull request's head
// commit. Hand it to commands.Register; the job it queues is worked by the
// workers Register adds.
func RetryCommand(d pipeline.Deps) commands.Runner { return retryCommand{deps: d} }

type retryCommand struct{ deps pipeline.Deps }

func (retryCommand) Name() string { return commands.Retry }

func (c retryCommand) Run(ctx context.Context, inv commands.Invocation) (commands.Outcome, error) {
	if len(inv.Command.Args) > 0 {
		return commands.Outcome{Reply: fmt.Sprintf("`%s %s` takes no arguments; it re-runs the latest failed deploy run of this pull request's head commit.",
			commands.Prefix, commands.Retry)}, nil
	}
	owner, repo, _ := strings.Cut(inv.Repository, "/")
	pr, _, err := inv.GitHub.PullRequests.Get(ctx, owner, repo, inv.PullRequest)
	if err != nil {
		return commands.Outcome{}, fmt.Errorf("read pull request #%d: %w", inv.PullRequest, err)
	}
	sha := pr.GetHead().GetSHA()
	run, err := latestFailedRun(ctx, inv, sha)
	if err != nil || run == nil {
		return commands.Outcome{Reply: fmt.Sprintf("There is no failed run of a deploy workflow named in `.github/ripcord.yml` on %s, the head of this pull request: nothing to retry.",
			short(sha))}, err
	}
	args := CommandRerunArgs{Repository: inv.Repository, RunID: run.GetID(), Attempt: max(run.GetRunAttempt(), 1),
		InstallationID: inv.InstallationID, PullRequest: inv.PullRequest, CommentID: inv.CommentID}
	return commands.Outcome{
		Reply: fmt.Sprintf("Re-running the failed jobs of run [%d](%s) (`%s`, attempt %d, %s).",
			run.GetID(), run.GetHTMLURL(), run.GetPath(), args.Attempt, run.GetConclusion()),
		Commit: func(ctx context.Context, tx *sql.Tx) error {
			_, err := c.deps.River().InsertTx(ctx, tx, args, &river.InsertOpts{MaxAttempts: jobAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true}})
			if err != nil {
				return fmt.Errorf("queue %s: %w", args.Kind(), err)
			}
			return nil
		},
	}, nil
}

// latestFailedRun is the newest completed, failed run of a configured
// workflow on sha, or nil.
func latestFailedRun(ctx context.Context, inv commands.Invocation, sha string) (*github.WorkflowRun, error) {
	owner, repo, _ := strings.Cut(inv.Repository, "/")
	runs, _, err := inv.GitHub.Actions.ListRepositoryWorkflowRuns(ctx, owner, repo, &github.ListWorkflowRunsOptions{
		HeadSHA: sha, Status: "completed", ListOptions: github.ListOptions{PerPage: 100}})
	if err != nil {
		return nil, fmt.Errorf("workflow runs of %s: %w", short(sha), err)
	}
	var best *github.WorkflowRun
	for _, r := range runs.WorkflowRuns {
		c := r.GetConclusion()
		if (c != "failure" && c != "timed_out") || len(inv.Config.Config.AppForWorkflow(r.GetPath())) == 0 {
			continue
		}
		if best == nil || r.GetCreatedAt().After(best.GetCreatedAt().Time) ||
			(r.GetCreatedAt().Time.Equal(best.GetCreatedAt().Time) && r.GetID() > best.GetID()) {
			best = r
		}
	}
	return best, nil
}

// CommandRerunArgs re-runs the failed jobs of one run attempt for a
// /ripcord retry. The run attempt is the idempotency key: two people asking
// at once get one re-run.
type CommandRerunArgs struct {
	Repository     string `json:"repository" river:"unique"`
	RunID          int64  `json:"run_id" river:"unique"`
	Attempt        int    `json:"attempt" river:"unique"`
	InstallationID int64  `json:"installation_id"`
	PullRequest    int    `json:"pull_request"`
	CommentID      int64  `json:"comment_id"`
}

// Kind names the job in the queue.
func (CommandRerunArgs) Kind() string { return "command_rerun" }

type commandRerunWorker struct {
	river.WorkerDefaults[CommandRerunArgs]
	f *flow
}

func (w *commandRerunWorker) Timeout(*river.Job[CommandRerunArgs]) time.Duration { return jobTimeout }

// Work re-runs the failed jobs unless the run moved on meanwhile. The
// person who asked was told "Re-running…" already, so when it cannot be done
// (GitHub refuses, or still fails at the job's last attempt) a reply says so:
// otherwise nothing would ever tell them the re-run did not happen.
func (w *commandRerunWorker) Work(ctx context.Context, job *river.Job[CommandRerunArgs]) error {
	a, f := job.Args, w.f
	err := w.rerun(ctx, a)
	switch {
	case err == nil:
		return nil
	case refused(err):
		f.metrics.effects.WithLabelValues("rerun", "refused").Inc()
		if rerr := w.reply(ctx, a, "refused", fmt.Sprintf("GitHub refused to re-run the failed jobs of run %d: %s.",
			a.RunID, githubMessage(err))); rerr != nil {
			return rerr
		}
		return river.JobCancel(err)
	case job.Attempt >= job.MaxAttempts:
		if rerr := w.reply(ctx, a, "failed", fmt.Sprintf("ripcord could not re-run the failed jobs of run %d: GitHub did not accept it in %d attempts (%s).",
			a.RunID, job.Attempt, githubMessage(err))); rerr != nil {
			return rerr
		}
	}
	return err
}

func (w *commandRerunWorker) rerun(ctx context.Context, a CommandRerunArgs) error {
	f := w.f
	gh, err := f.deps.GitHub.NewInstallationClient(a.InstallationID)
	if err != nil {
		return fmt.Errorf("github client for installation %d: %w", a.InstallationID, err)
	}
	if _, moved, err := currentRun(ctx, gh, a.Repository, a.RunID, a.Attempt); err != nil || moved {
		return err // re-run already, by ripcord's own retry or by hand
	}
	owner, repo, _ := strings.Cut(a.Repository, "/")
	_, err = gh.Actions.RerunFailedJobsByID(ctx, owner, repo, a.RunID)
	if refused(err) && rerunHappened(ctx, gh, a.Repository, a.RunID, a.Attempt) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("re-run failed jobs of %s run %d: %w", a.Repository, a.RunID, err)
	}
	f.metrics.effects.WithLabelValues("rerun", "done").Inc()
	return nil
}

// reply answers the command's comment; what names the answer, so a job
// that runs again posts it once.
func (w *commandRerunWorker) reply(ctx context.Context, a CommandRerunArgs, what, body string) error {
	reply := commands.ReplyArgs{Repository: a.Repository, Number: a.PullRequest, InstallationID: a.InstallationID,
		Key: fmt.Sprintf("comment-%d-%s", a.CommentID, what), Body: body}
	if _, err := w.f.deps.River().Insert(ctx, reply, &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}); err != nil {
		return fmt.Errorf("queue the reply to comment %d: %w", a.CommentID, err)
	}
	return nil
}
