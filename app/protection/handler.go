package protection

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/pipeline"
)

// handler turns a deployment_protection_rule "requested" event into a
// review job; the job reads GitHub, the handler does not.
type handler struct{ deps pipeline.Deps }

func (handler) Handles() []string { return []string{"deployment_protection_rule"} }

func (h handler) Handle(_ context.Context, d pipeline.Delivery) (pipeline.Commit, error) {
	var ev github.DeploymentProtectionRuleEvent
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		return nil, pipeline.Permanent(fmt.Errorf("decode deployment_protection_rule event: %w", err))
	}
	if ev.GetAction() != "requested" {
		return nil, nil
	}
	runID, err := runIDOf(ev.GetDeploymentCallbackURL())
	if err != nil {
		return nil, pipeline.Permanent(err)
	}
	args := ReviewArgs{
		Repository: ev.GetRepo().GetFullName(), Environment: ev.GetEnvironment(), RunID: runID,
		DeploymentID: ev.GetDeployment().GetID(), SHA: ev.GetDeployment().GetSHA(), InstallationID: d.InstallationID,
		RequestedAt: h.deps.Now().Unix(),
	}
	if args.Repository == "" || args.InstallationID == 0 || args.Environment == "" {
		return nil, nil // not an App delivery: nothing to answer as
	}
	return func(ctx context.Context, tx *sql.Tx) error {
		_, err := h.deps.River().InsertTx(ctx, tx, args, &river.InsertOpts{
			MaxAttempts: reviewAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true}})
		if err != nil {
			return fmt.Errorf("queue protection review of run %d in %s: %w", runID, args.Repository, err)
		}
		return nil
	}, nil
}

// runIDOf reads the run id from deployment_callback_url,
// ".../repos/{owner}/{repo}/actions/runs/{run_id}/deployment_protection_rule".
func runIDOf(callback string) (int64, error) {
	u, err := url.Parse(callback)
	if err != nil {
		return 0, fmt.Errorf("deployment_callback_url %q: %w", callback, err)
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "actions" && parts[i+1] == "runs" {
			if id, err := strconv.ParseInt(parts[i+2], 10, 64); err == nil && id > 0 {
				return id, nil
			}
		}
	}
	return 0, fmt.Errorf("deployment_callback_url %q names no workflow run (…/actions/runs/{run_id}/deployment_protection_rule)", callback)
}
