package commands

import (
	"context"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/app/pipeline"
)

// Invocation is one allowed command, with what a Runner needs to decide.
type Invocation struct {
	DeliveryID     string
	Repository     string // owner/name
	InstallationID int64
	PullRequest    int // the pull request (or, for an IssueRunner, the issue) the comment is on
	CommentID      int64
	User           string
	Command        Command
	Config         configload.Result // valid: the handler checked
	// GitHub is the installation's client for reads; writes go through jobs.
	GitHub *github.Client
	Now    time.Time
}

// Outcome is what a Runner decided: the reply to post, and the work to queue
// in the delivery's transaction (nil when there is none).
type Outcome struct {
	Reply  string
	Commit pipeline.Commit
}

// Runner carries out one command. Run decides (reads and GitHub GETs are
// fine) and returns its effects as a Commit, like an EventHandler.
type Runner interface {
	Name() string
	Run(ctx context.Context, inv Invocation) (Outcome, error)
}

// IssueRunner is a Runner that also runs in comments on issues, not only on
// pull requests (/ripcord rollback). Others are not answered on issues.
type IssueRunner interface {
	Runner
	RunsOnIssues() bool
}

// Prechecker is a Runner that can refuse a command from ripcord's own
// records, before the handler asks GitHub anything (the config, the
// commenter's permission): a command that cannot do anything (an approval
// of a rollout that has ended) costs no GitHub call and is answered why at
// once. Run still checks all of it: the records may change in between.
type Prechecker interface {
	Runner
	// Precheck returns the reply to a command it refuses, "" to go on.
	Precheck(ctx context.Context, cmd Command) (string, error)
}
