package gatesflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/pipeline"
)

// pullRequestHandler queues the gates of a PR whose head moved, or whose
// labels or body changed (qa and policy-validation read the labels, itsm
// the body: their runs must follow). Whether the PR is a release (it
// changes a release file, or comes from a release branch), and whether a
// label or body change concerns its gates, needs GitHub reads and the
// config, so the job decides.
type pullRequestHandler struct{ deps pipeline.Deps }

func (pullRequestHandler) Handles() []string { return []string{"pull_request"} }

func (h pullRequestHandler) Handle(_ context.Context, d pipeline.Delivery) (pipeline.Commit, error) {
	var ev github.PullRequestEvent
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		return nil, fmt.Errorf("decode pull_request event: %w", err)
	}
	args := EvaluateArgs{
		Repository: ev.GetRepo().GetFullName(), PullRequest: ev.GetNumber(), HeadSHA: ev.GetPullRequest().GetHead().GetSHA(),
		InstallationID: d.InstallationID, Trigger: "pull_request " + ev.GetAction(),
	}
	switch ev.GetAction() {
	case "opened", "synchronize", "reopened":
	case "labeled", "unlabeled":
		args.Label = ev.GetLabel().GetName()
		if args.Label == "" {
			return nil, nil
		}
	case "edited":
		switch {
		case ev.GetChanges().GetBase() != nil:
			args.Edited = editedBase
		case ev.GetChanges().GetBody() != nil:
			args.Edited = editedBody
		default:
			return nil, nil // the title: no gate reads it
		}
	default:
		return nil, nil
	}
	if args.Label != "" || args.Edited != "" || ev.GetAction() == "synchronize" || ev.GetAction() == "reopened" {
		// Each change is its own evaluation (a label added, removed and
		// added again is three); a redelivery of one stays one. So is each
		// push: one that brings the pull request back to a head it had
		// before (a force push) must judge the pull request as it is now,
		// not be dropped as that head's first push again, whose verdict
		// predates what changed while the head was elsewhere. So is each
		// reopening: closed and reopened again at the same head, the pull
		// request is judged as it is now (the config, the release records
		// moved on), not dropped as that head's first reopening.
		args.Trigger += " " + d.ID
	}
	if args.Repository == "" || args.InstallationID == 0 || args.HeadSHA == "" {
		return nil, nil // not an App delivery: nothing to act as
	}
	return func(ctx context.Context, tx *sql.Tx) error { return queueEvaluate(ctx, tx, h.deps, args) }, nil
}
