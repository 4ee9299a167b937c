package rollbackflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/app/deployments"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/app/recoveryflow"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/repoconfig"
)

// closedHandler ends the release of a rollback pull request that a person
// closed without merging: the release will never run, so it is withdrawn
// (records.Withdraw) and a new rollback may be opened in its place. For a
// merged pull request it records the merge on the releases opened for it,
// which starts their stall clock (merged.go). A reopened one is answered
// in reopened_withdrawn.go, or reopened_stale.go when it is stale; what
// the starter asks GitHub about a rollback's pull request before a claim
// is in closed_meanwhile.go.
type closedHandler struct {
	deps pipeline.Deps
	// loader reads the config of a rollback release's app repository, which
	// names the repository of its pull request (rollbackRepository).
	loader *configload.Loader
}

func (closedHandler) Handles() []string { return []string{"pull_request"} }

func (h closedHandler) Handle(ctx context.Context, d pipeline.Delivery) (pipeline.Commit, error) {
	var ev github.PullRequestEvent
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		return nil, pipeline.Permanent(fmt.Errorf("decode pull_request event: %w", err))
	}
	pr := ev.GetPullRequest()
	if ev.GetAction() == "reopened" && pr.GetHTMLURL() != "" {
		return h.reopened(ctx, d, ev)
	}
	if ev.GetAction() != "closed" || pr.GetHTMLURL() == "" {
		return nil, nil
	}
	if pr.GetMerged() {
		return h.closedMerged(ctx, d, ev)
	}
	return h.closedUnmerged(ctx, d, ev)
}

// closedUnmerged answers the close of a pull request without merging:
// the rollback opened for it is withdrawn (withdraw), a withdrawn one that
// held its environment again since it was reopened lets it go (unclaim),
// and so does a rollback pull request without a release
// (releaseUnrecorded).
func (h closedHandler) closedUnmerged(ctx context.Context, d pipeline.Delivery, ev github.PullRequestEvent) (pipeline.Commit, error) {
	pr := ev.GetPullRequest()
	ids, err := h.rollbacksOf(ctx, ev.GetRepo().GetFullName(), pr.GetHTMLURL(), pr.GetNumber(),
		"state = '"+string(records.StateOpened)+"'")
	if err != nil {
		return nil, err
	}
	// A withdrawn rollback whose pull request was reopened holds its
	// environment (reclaim) until the pull request is closed again.
	held, err := h.rollbacksOf(ctx, ev.GetRepo().GetFullName(), pr.GetHTMLURL(), pr.GetNumber(), reclaimedCondition)
	if err != nil {
		return nil, err
	}
	unrecorded, err := unrecordedHeld(ctx, h.deps.DB.Read, pr.GetHTMLURL())
	if err != nil || len(ids) == 0 && len(held) == 0 && !unrecorded {
		return nil, err
	}
	if closed, err := h.asOnGitHub(ctx, d, ev); err != nil || !closed {
		return nil, err
	}
	why := closedWhy(pr.GetHTMLURL(), ev.GetSender().GetLogin())
	return func(ctx context.Context, tx *sql.Tx) error {
		if unrecorded {
			if err := releaseUnrecorded(ctx, tx, pr.GetHTMLURL()); err != nil {
				return err
			}
		}
		if err := unclaim(ctx, tx, held...); err != nil || len(ids) == 0 {
			return err
		}
		_, err := withdraw(ctx, tx, h.deps, ids[0], why, map[string]any{"pull_request": pr.GetHTMLURL(),
			"closed_by": ev.GetSender().GetLogin(), "delivery_id": d.ID})
		return err
	}, nil
}

// asOnGitHub says whether ev's pull request is, on GitHub now, what the
// event says it became: closed without merging for a close, open for a
// reopening; it is asked before either is acted on. GitHub signs a
// delivery's body, not its id, so a captured closed event can be posted
// again under a new id after a person reopened the pull request (or a
// reopened one after it was closed again), and GitHub does not promise
// delivery order either: a close delivered after the reopening that
// followed it is as old. Acted on, such a close would withdraw an opened
// rollback whose pull request is open, or end the hold of a reopened one
// (reclaim), and a second rollback would be opened beside it; such a
// reopening would make a closed pull request hold its environment, and
// say again on it what was said. The payload cannot tell: its closed_at
// is GitHub's second, ripcord records a reopening at its own time
// (rollback_reopened), and a close and a reopening can share a second.
// GitHub's word can: one read of the pull request, for an event that has
// something to act on. When ripcord cannot ask (not installed, no App, or
// GitHub has no such pull request for it) the event is taken at its word,
// as before; any other failure is the delivery's, retried.
func (h closedHandler) asOnGitHub(ctx context.Context, d pipeline.Delivery, ev github.PullRequestEvent) (bool, error) {
	pr := ev.GetPullRequest()
	now, err := pullRequestNow(ctx, h.deps, ev.GetRepo().GetFullName(), pr.GetNumber())
	var refused *Refused
	var notFound *github.ErrorResponse
	switch {
	case errors.As(err, &refused) || errors.As(err, &notFound) && notFound.Response != nil &&
		notFound.Response.StatusCode == http.StatusNotFound:
		h.deps.Log.Warn("cannot ask GitHub about a rollback pull request; its event is taken at its word",
			"pull_request", pr.GetHTMLURL(), "action", ev.GetAction(), "delivery", d.ID, "err", err)
		return true, nil
	case err != nil:
		return false, err
	case ev.GetAction() == "reopened" && now.GetState() == "open":
		return true, nil
	case ev.GetAction() == "closed" && now.GetState() == "closed" && !now.GetMerged():
		return true, nil
	}
	h.deps.Log.Info("event of a rollback pull request ignored: GitHub has it otherwise now (changed since, "+
		"or the delivery posted again)", "pull_request", pr.GetHTMLURL(), "action", ev.GetAction(), "delivery", d.ID,
		"state", now.GetState(), "merged", now.GetMerged())
	return false, nil
}

// withdrawnCondition selects withdrawn releases (records.Withdrawn) in
// rollbacksOf; reclaimedCondition those of them that hold their
// environment again since their pull request was reopened (reclaim).
const (
	withdrawnCondition = "state = '" + string(records.StateAborted) + "' AND last_fact_at IS NULL"
	reclaimedCondition = withdrawnCondition + " AND release_id IN (SELECT release_id FROM rollback_reopened)"
)

// rollbacksOf are the rollback releases, newest first, whose pull request
// is number of repository, whose page is htmlURL, among those where
// selects. A release is that pull request's when its pr_url is htmlURL, or
// when it has no pr_url (opened by POST /api/v1/releases with the number
// only) and its pull request's repository (rollbackRepository) is
// repository: a rollback release is recorded with its app's repository
// however its config names a GitOps repository for the pull request.
func (h closedHandler) rollbacksOf(ctx context.Context, repository, htmlURL string, number int, where string) ([]string, error) {
	if number <= 0 {
		return nil, nil
	}
	fail := func(err error) ([]string, error) {
		return nil, fmt.Errorf("rollback releases of %s: %w", htmlURL, err)
	}
	rows, err := h.deps.DB.Read.QueryContext(ctx, `SELECT release_id, repository, app, environment, pr_url FROM records
		WHERE kind = $1 AND pr_number = $2 AND (pr_url = $3 OR pr_url = '') AND `+where+`
		ORDER BY created_at DESC, release_id DESC`, string(records.KindRollback), number, htmlURL)
	if err != nil {
		return fail(err)
	}
	type candidate struct{ id, repository, app, environment, prURL string }
	var cs []candidate
	for rows.Next() {
		var c candidate
		if err := rows.Scan(&c.id, &c.repository, &c.app, &c.environment, &c.prURL); err != nil {
			rows.Close()
			return fail(err)
		}
		cs = append(cs, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	var ids []string
	for _, c := range cs {
		if c.prURL == "" {
			prRepo, err := h.rollbackRepository(ctx, c.repository, c.app, c.environment)
			if err != nil {
				return fail(err)
			}
			if !strings.EqualFold(prRepo, repository) {
				continue
			}
		}
		ids = append(ids, c.id)
	}
	return ids, nil
}

// rollbackRepository is the repository where the rollback pull requests of
// app in environment live: the rollback.repository that the config of
// repository (the app's) names for it, or repository itself when it names
// none, or has no config that loads, or ripcord is not installed there.
func (h closedHandler) rollbackRepository(ctx context.Context, repository, app, environment string) (string, error) {
	inst, err := installationOf(ctx, h.deps, repository)
	var refused *Refused
	if errors.As(err, &refused) {
		return repository, nil
	}
	if err != nil {
		return "", err
	}
	gh, err := h.deps.GitHub.NewInstallationClient(inst)
	if err != nil {
		return "", fmt.Errorf("github client for installation %d: %w", inst, err)
	}
	res, err := h.loader.Load(ctx, gh.Repositories, repository, "")
	if err != nil {
		return "", err
	}
	if !res.Valid() {
		return repository, nil
	}
	env, ok := res.Config.Environment(app, environment)
	if !ok || env.Rollback.Mode != repoconfig.ModePullRequest {
		return repository, nil
	}
	return or(env.Rollback.Repository, repository), nil
}

func closedWhy(htmlURL, by string) string {
	why := "pull request " + htmlURL + " was closed without merging"
	if by != "" {
		why += " by @" + by
	}
	return why
}

// withdraw withdraws an opened release in tx and queues its check run;
// nothing happens when the release is not opened any more.
func withdraw(ctx context.Context, tx *sql.Tx, d pipeline.Deps, releaseID, why string, data map[string]any) (records.Record, error) {
	rec, ok, err := d.Records.WithdrawRelease(ctx, tx, releaseID, why, data, d.Now())
	if err != nil || !ok {
		return rec, err
	}
	d.Log.Info("rollback release withdrawn", "release_id", releaseID, "why", why)
	if err := QueueReleaseChecks(ctx, tx, d.River(), []records.Record{rec}); err != nil {
		return rec, err
	}
	// The recovery episode that opened it, if one did, ends in rollback_failed.
	if err := recoveryflow.QueueRollbackOutcomes(ctx, tx, d.River(), []records.Record{rec}); err != nil {
		return rec, err
	}
	// Its GitHub deployment must not stay in_progress for ever.
	return rec, deployments.Queue(ctx, tx, d.River(), d.Log, []records.Record{rec})
}
