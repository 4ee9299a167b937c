package gatesflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/pipeline"
)

// checkSuiteHandler re-evaluates the gates when someone clicks "Re-run all
// checks" on ripcord's check suite: GitHub sends check_suite rerequested,
// not a check_run per run. Every gate of the head commit is evaluated
// again, as a push would, in a new evaluation (its own sequence); when the
// commit is no longer the pull request's head, the evaluation answers in
// each of the pull request's gate runs there instead (oldHead).
type checkSuiteHandler struct{ deps pipeline.Deps }

func (checkSuiteHandler) Handles() []string { return []string{"check_suite"} }

// HandlesAction keeps the requested and completed suites GitHub sends for
// every push out of the job queue: they are stored ignored at intake.
func (checkSuiteHandler) HandlesAction(_, action string) bool { return action == "rerequested" }

func (h checkSuiteHandler) Handle(ctx context.Context, d pipeline.Delivery) (pipeline.Commit, error) {
	if d.Action != "rerequested" {
		return nil, nil
	}
	var ev github.CheckSuiteEvent
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		return nil, pipeline.Permanent(fmt.Errorf("decode check_suite event: %w", err))
	}
	cs := ev.GetCheckSuite()
	repository, head := ev.GetRepo().GetFullName(), cs.GetHeadSHA()
	// Another App's suite is that App's to run again.
	if app := cs.GetApp().GetID(); app == 0 || app != h.deps.App().ID || repository == "" || head == "" || d.InstallationID == 0 {
		return nil, nil
	}
	var numbers []int
	for _, pr := range cs.PullRequests {
		if n := pr.GetNumber(); n > 0 && !slices.Contains(numbers, n) {
			numbers = append(numbers, n)
		}
	}
	if len(numbers) == 0 {
		// GitHub lists no pull request for a suite whose head branch is in
		// a fork: the pull requests are those our gate runs on the commit
		// name (the job still checks that each one's head is the commit).
		var err error
		if numbers, err = h.gatedPullRequests(ctx, d.InstallationID, repository, head); err != nil {
			return nil, err
		}
	}
	if len(numbers) == 0 {
		return nil, nil // no pull request to evaluate the gates against
	}
	return func(ctx context.Context, tx *sql.Tx) error {
		for _, n := range numbers {
			if err := queueEvaluate(ctx, tx, h.deps, EvaluateArgs{
				Repository: repository, PullRequest: n, HeadSHA: head, InstallationID: d.InstallationID,
				// The delivery id makes each click its own evaluation; a
				// redelivery of the same click stays one.
				Trigger: suiteTrigger + d.ID,
			}); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// gatedPullRequests lists the pull requests whose gates this App evaluated
// on head, from the external ids of its gate runs there.
func (h checkSuiteHandler) gatedPullRequests(ctx context.Context, installationID int64, repository, head string) ([]int, error) {
	gh, err := h.deps.GitHub.NewInstallationClient(installationID)
	if err != nil {
		return nil, fmt.Errorf("github client for installation %d: %w", installationID, err)
	}
	runs, err := gateRuns(ctx, gh, h.deps.App().ID, repository, head)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, cr := range runs {
		if n, ok := pullRequestOf(cr.GetExternalID(), repository, head); ok && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}
