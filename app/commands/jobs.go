package commands

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
)

// Job settings. A reaction outranks a reply (lower runs first), so the 👀
// shows before the answer.
const (
	jobAttempts      = 8
	reactionPriority = 1
	replyPriority    = 2
	jobTimeout       = time.Minute
)

// ReactionArgs adds a reaction to an issue or pull request comment. The
// comment and content are the idempotency key; GitHub itself answers 200 to
// the same reaction twice, so a retried job is harmless too.
type ReactionArgs struct {
	Repository     string `json:"repository" river:"unique"`
	CommentID      int64  `json:"comment_id" river:"unique"`
	Content        string `json:"content" river:"unique"`
	InstallationID int64  `json:"installation_id"`
}

// Kind names the job in the queue.
func (ReactionArgs) Kind() string { return "comment_reaction" }

// ReplyArgs posts a comment on an issue or pull request. Key is the
// idempotency key: one reply per key, ever.
type ReplyArgs struct {
	Repository     string `json:"repository" river:"unique"`
	Number         int    `json:"number"`
	Key            string `json:"key" river:"unique"`
	Body           string `json:"body"`
	InstallationID int64  `json:"installation_id"`
	// After is the key of a reply that must be on the conversation first:
	// the answer to a request a job carries out ("not opened: …") after
	// the acknowledgement ("I will post the link here"), queued side by
	// side. It waits up to afterWait, then posts anyway.
	After string `json:"after,omitempty"`
}

// afterWait bounds how long a reply waits for the one it comes after: that
// one's job may have been dropped.
const afterWait = time.Minute

// Kind names the job in the queue.
func (ReplyArgs) Kind() string { return "comment_reply" }

// QueueReaction queues a reaction in the caller's transaction.
func QueueReaction(ctx context.Context, tx *sql.Tx, rc *river.Client[*sql.Tx], a ReactionArgs) error {
	_, err := rc.InsertTx(ctx, tx, a, &river.InsertOpts{Priority: reactionPriority, MaxAttempts: jobAttempts,
		UniqueOpts: river.UniqueOpts{ByArgs: true}})
	if err != nil {
		return fmt.Errorf("queue %s reaction to comment %d: %w", a.Content, a.CommentID, err)
	}
	return nil
}

// QueueReply queues a comment in the caller's transaction.
func QueueReply(ctx context.Context, tx *sql.Tx, rc *river.Client[*sql.Tx], a ReplyArgs) error {
	_, err := rc.InsertTx(ctx, tx, a, &river.InsertOpts{Priority: replyPriority, MaxAttempts: jobAttempts,
		UniqueOpts: river.UniqueOpts{ByArgs: true}})
	if err != nil {
		return fmt.Errorf("queue reply %s on %s#%d: %w", a.Key, a.Repository, a.Number, err)
	}
	return nil
}

type reactionWorker struct {
	river.WorkerDefaults[ReactionArgs]
	deps pipeline.Deps
}

func (w *reactionWorker) Timeout(*river.Job[ReactionArgs]) time.Duration { return jobTimeout }

func (w *reactionWorker) Work(ctx context.Context, job *river.Job[ReactionArgs]) error {
	err := w.work(ctx, job)
	if snooze := pipeline.LimitSnooze(ctx, w.deps, job.Kind, err); snooze != nil {
		return snooze
	}
	return err
}

func (w *reactionWorker) work(ctx context.Context, job *river.Job[ReactionArgs]) error {
	a := job.Args
	gh, err := w.deps.GitHub.NewInstallationClient(a.InstallationID)
	if err != nil {
		return fmt.Errorf("github client for installation %d: %w", a.InstallationID, err)
	}
	owner, repo, _ := strings.Cut(a.Repository, "/")
	// Reacting twice with the same content is a no-op on GitHub.
	if _, _, err := gh.Reactions.CreateIssueCommentReaction(ghclient.Idempotent(ctx), owner, repo, a.CommentID, a.Content); err != nil {
		return fmt.Errorf("react %s to comment %d on %s: %w", a.Content, a.CommentID, a.Repository, err)
	}
	return nil
}

type replyWorker struct {
	river.WorkerDefaults[ReplyArgs]
	deps pipeline.Deps
}

func (w *replyWorker) Timeout(*river.Job[ReplyArgs]) time.Duration { return jobTimeout }

// marker ends every reply with its key, invisible in the rendered comment,
// so a retried job can tell that an earlier attempt already posted it.
func marker(key string) string { return "<!-- ripcord:reply " + key + " -->" }

func (w *replyWorker) Work(ctx context.Context, job *river.Job[ReplyArgs]) error {
	err := w.work(ctx, job)
	if snooze := pipeline.LimitSnooze(ctx, w.deps, job.Kind, err); snooze != nil {
		return snooze
	}
	return err
}

func (w *replyWorker) work(ctx context.Context, job *river.Job[ReplyArgs]) error {
	a := job.Args
	gh, err := w.deps.GitHub.NewInstallationClient(a.InstallationID)
	if err != nil {
		return fmt.Errorf("github client for installation %d: %w", a.InstallationID, err)
	}
	owner, repo, _ := strings.Cut(a.Repository, "/")
	if a.After != "" && time.Since(job.CreatedAt) < afterWait {
		posted, err := alreadyPosted(ctx, gh, owner, repo, a.Repository, a.Number, a.After)
		if err != nil {
			return err
		}
		if !posted {
			return river.JobSnooze(time.Second)
		}
	}
	if job.Attempt > 1 {
		posted, err := alreadyPosted(ctx, gh, owner, repo, a.Repository, a.Number, a.Key)
		if err != nil || posted {
			return err
		}
	}
	body := a.Body + "\n\n" + marker(a.Key)
	if _, _, err := gh.Issues.CreateComment(ctx, owner, repo, a.Number, &github.IssueComment{Body: &body}); err != nil {
		return fmt.Errorf("reply %s on %s#%d: %w", a.Key, a.Repository, a.Number, err)
	}
	return nil
}

// maxCommentPages bounds the search for an earlier copy of a reply.
const maxCommentPages = 10

// alreadyPosted looks for the marker of reply key among the conversation's
// comments. The issue-comments API lists oldest first and takes no sort
// order, so it pages (a retry is rare; 10 pages of 100 is the bound).
func alreadyPosted(ctx context.Context, gh *github.Client, owner, repo, fullName string, number int, key string) (bool, error) {
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for range maxCommentPages {
		cs, resp, err := gh.Issues.ListComments(ctx, owner, repo, number, opts)
		if err != nil {
			return false, fmt.Errorf("look for reply %s on %s#%d: %w", key, fullName, number, err)
		}
		for _, c := range cs {
			if strings.Contains(c.GetBody(), marker(key)) {
				return true, nil
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return false, nil
}
