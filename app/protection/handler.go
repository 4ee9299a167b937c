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
	args := ReviewArgs{
		Repository: ev.GetRepo().GetFullName(), Environment: ev.GetEnvironment(),
		DeploymentID: ev.GetDeployment().GetID(), SHA: ev.GetDeployment().GetSHA(), InstallationID: d.InstallationID,
		RequestedAt: h.deps.Now().Unix(),
	}
	if args.Repository == "" || args.InstallationID == 0 || args.Environment == "" {
		return nil, nil // not an App delivery: nothing to answer as
	}
	runID, err := runIDOf(ev.GetDeploymentCallbackURL(), args.Repository)
	if err != nil {
		return nil, pipeline.Permanent(err)
	}
	args.RunID = runID
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
// ".../repos/{owner}/{repo}/actions/runs/{run_id}/deployment_protection_rule",
// which must name the event's repository. Only the run id is taken: the
// answer goes to the configured GitHub API, never to the URL's host, and a
// run of another repository is not one the event's repository's run of
// that number may be answered for.
func runIDOf(callback, repository string) (int64, error) {
	u, err := url.Parse(callback)
	if err != nil {
		return 0, fmt.Errorf("deployment_callback_url %q: %w", callback, err)
	}
	// The tail of the path: GitHub Enterprise Server puts /api/v3 before it.
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if n := len(parts); n >= 7 {
		p := parts[n-7:]
		id, err := strconv.ParseInt(p[5], 10, 64)
		if p[0] == "repos" && p[3] == "actions" && p[4] == "runs" && p[6] == "deployment_protection_rule" && err == nil && id > 0 {
			if named := p[1] + "/" + p[2]; !strings.EqualFold(named, repository) {
				return 0, fmt.Errorf("deployment_callback_url %q names %s, not the event's repository %s", callback, named, repository)
			}
			return id, nil
		}
	}
	return 0, fmt.Errorf("deployment_callback_url %q names no workflow run (…/repos/{owner}/{repo}/actions/runs/{run_id}/deployment_protection_rule)", callback)
}
