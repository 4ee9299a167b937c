package gatesflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/pipeline"
)

// pullRequestHandler queues the gates of a PR whose head moved. Whether the
// PR is a release (it changes a release file, or comes from a release
// branch) needs GitHub reads, so the job decides.
type pullRequestHandler struct{ deps pipeline.Deps }

func (pullRequestHandler) Handles() []string { return []string{"pull_request"} }

func (h pullRequestHandler) Handle(_ context.Context, d pipeline.Delivery) (pipeline.Commit, error) {
	var ev github.PullRequestEvent
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		return nil, fmt.Errorf("decode pull_request event: %w", err)
	}
	switch ev.GetAction() {
	case "opened", "synchronize", "reopened":
	default:
		return nil, nil
	}
	args := EvaluateArgs{
		Repository: ev.GetRepo().GetFullName(), PullRequest: ev.GetNumber(), HeadSHA: ev.GetPullRequest().GetHead().GetSHA(),
		InstallationID: d.InstallationID, Trigger: "pull_request " + ev.GetAction(),
	}
	if args.Repository == "" || args.InstallationID == 0 || args.HeadSHA == "" {
		return nil, nil // not an App delivery: nothing to act as
	}
	return func(ctx context.Context, tx *sql.Tx) error { return queueEvaluate(ctx, tx, h.deps, args) }, nil
}
