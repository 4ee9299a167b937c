package gatesflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/go-github/v66/github"
	"github.com/tidwall/gjson"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/gates"
)

// checkRunHandler re-evaluates the gates when someone clicks "Re-run" on a
// ripcord/<gate> check run. Every gate of the PR is evaluated again: they
// share one subject and cost little next to the cache.
type checkRunHandler struct{ deps pipeline.Deps }

func (checkRunHandler) Handles() []string { return []string{"check_run"} }

func (h checkRunHandler) Handle(_ context.Context, d pipeline.Delivery) (pipeline.Commit, error) {
	// Look at the name first: most check runs are other apps', and their
	// payloads need not decode into go-github's types at all.
	if name := gjson.GetBytes(d.Body, "check_run.name").String(); d.Action != "rerequested" ||
		!strings.HasPrefix(name, gates.CheckPrefix) || !isGate(name) {
		return nil, nil
	}
	var ev github.CheckRunEvent
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		return nil, pipeline.Permanent(fmt.Errorf("decode check_run event: %w", err))
	}
	cr := ev.GetCheckRun()
	number, ours := 0, int64(0)
	if n, ok := pullRequestOf(cr.GetExternalID(), ev.GetRepo().GetFullName(), cr.GetHeadSHA()); ok && cr.GetApp().GetID() == h.deps.App().ID {
		// The pull request is the one our run's external id names: GitHub
		// lists every open pull request whose head is the run's commit or
		// branch (another base, say), in no promised order, and none for a
		// run whose head branch is in a fork. The job still checks that
		// its head is the run's commit.
		number, ours = n, cr.GetID()
	} else if len(cr.PullRequests) > 0 {
		number = cr.PullRequests[0].GetNumber()
	}
	if number == 0 {
		return nil, nil // a gate run outside a PR: nothing to re-evaluate against
	}
	args := EvaluateArgs{
		Repository: ev.GetRepo().GetFullName(), PullRequest: number, HeadSHA: cr.GetHeadSHA(),
		InstallationID: d.InstallationID,
		// The delivery id makes each click its own job; a redelivery of the
		// same click stays one.
		Trigger:    "check_run rerequested " + d.ID,
		CheckRunID: ours,
	}
	if args.Repository == "" || args.InstallationID == 0 {
		return nil, nil
	}
	return func(ctx context.Context, tx *sql.Tx) error { return queueEvaluate(ctx, tx, h.deps, args) }, nil
}

var gateNames = []string{
	gates.NameProvenance, gates.NameValues, gates.NameCommitSigning, gates.NameSAST, gates.NameSBOM,
	gates.NameImageScan, gates.NameITSM, gates.NameQA, gates.NamePolicyValidation,
}

func isGate(check string) bool {
	for _, n := range gateNames {
		if check == gates.CheckName(n) {
			return true
		}
	}
	return false
}
