package rollbackflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/deployments"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/app/recoveryflow"
	"github.com/ripcord/ripcord/records"
)

// closedHandler ends the release of a rollback pull request that a person
// closed without merging: the release will never run, so it is withdrawn
// (records.Withdraw) and a new rollback may be opened in its place. For a
// merged pull request it records the merge on the releases opened for it,
// which starts their stall clock.
type closedHandler struct{ deps pipeline.Deps }

func (closedHandler) Handles() []string { return []string{"pull_request"} }

func (h closedHandler) Handle(ctx context.Context, d pipeline.Delivery) (pipeline.Commit, error) {
	var ev github.PullRequestEvent
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		return nil, pipeline.Permanent(fmt.Errorf("decode pull_request event: %w", err))
	}
	pr := ev.GetPullRequest()
	if ev.GetAction() != "closed" || pr.GetHTMLURL() == "" {
		return nil, nil
	}
	if pr.GetMerged() {
		return h.merged(ev), nil
	}
	id, err := openRollbackOf(ctx, h.deps.DB.Read, ev.GetRepo().GetFullName(), pr.GetHTMLURL(), pr.GetNumber())
	if err != nil || id == "" {
		return nil, err
	}
	why := closedWhy(pr.GetHTMLURL(), ev.GetSender().GetLogin())
	return func(ctx context.Context, tx *sql.Tx) error {
		_, err := withdraw(ctx, tx, h.deps, id, why, map[string]any{"pull_request": pr.GetHTMLURL(),
			"closed_by": ev.GetSender().GetLogin(), "delivery_id": d.ID})
		return err
	}, nil
}

// merged starts the stall clock of the releases opened for a merged pull
// request (records.MarkMerged): they can run only now, so only now may
// the lack of a fact mean that one was lost (seed 003, decision 6).
func (h closedHandler) merged(ev github.PullRequestEvent) pipeline.Commit {
	pr := ev.GetPullRequest()
	at := pr.GetMergedAt().Time
	if at.IsZero() {
		at = h.deps.Now()
	}
	return func(ctx context.Context, tx *sql.Tx) error {
		ids, err := h.deps.Records.MarkMerged(ctx, tx, ev.GetRepo().GetFullName(), pr.GetHTMLURL(), pr.GetNumber(), at)
		if err == nil && len(ids) > 0 {
			h.deps.Log.Info("pull request merged: releases wait for facts from now", "pull_request", pr.GetHTMLURL(),
				"release_ids", ids)
		}
		return err
	}
}

// openRollbackOf is the opened rollback release whose pull request is
// number of repository, whose page is htmlURL; "" when there is none. A
// release is the pull request's as records.MarkMerged counts it: its
// pr_url is htmlURL, or it has no pr_url and its repository is the pull
// request's.
func openRollbackOf(ctx context.Context, db *sql.DB, repository, htmlURL string, number int) (string, error) {
	if number <= 0 {
		return "", nil
	}
	var id string
	err := db.QueryRowContext(ctx, `SELECT release_id FROM records WHERE state = $1 AND kind = $2
		AND pr_number = $3 AND (pr_url = $4 OR (pr_url = '' AND lower(repository) = lower($5)))
		ORDER BY created_at DESC LIMIT 1`,
		string(records.StateOpened), string(records.KindRollback), number, htmlURL, repository).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("rollback release of %s: %w", htmlURL, err)
	}
	return id, nil
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

// closedMeanwhile asks GitHub about the pull request of rec, an opened
// rollback release, before it is offered as open already: when it was
// closed without merging and ripcord missed the event, rec is withdrawn
// now and returned as such. When GitHub cannot say, rec is returned as it
// is: the answer is then the one ripcord would have given anyway.
func (st *starter) closedMeanwhile(ctx context.Context, plan Plan, rec records.Record) (records.Record, error) {
	d := st.deps
	repo, number := pullRequestOf(rec, plan.Request.Repository)
	pr, err := st.pullRequest(ctx, repo, number)
	if err != nil {
		d.Log.Warn("cannot tell whether a rollback pull request is still open", "release_id", rec.ReleaseID,
			"pull_request", rec.PRURL, "err", err)
		return rec, nil
	}
	if pr.GetState() != "closed" || pr.GetMerged() {
		return rec, nil
	}
	why := closedWhy(or(pr.GetHTMLURL(), rec.PRURL), "") + " (found on GitHub: ripcord missed the close)"
	var out records.Record
	err = d.DB.InDurableTx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = withdraw(ctx, tx, d, rec.ReleaseID, why, map[string]any{"pull_request": or(pr.GetHTMLURL(), rec.PRURL)})
		return err
	})
	return out, err
}

func (st *starter) pullRequest(ctx context.Context, repository string, number int) (*github.PullRequest, error) {
	inst, err := installationOf(ctx, st.deps.DB.Read, repository)
	if err != nil {
		return nil, err
	}
	gh, err := st.deps.GitHub.NewInstallationClient(inst)
	if err != nil {
		return nil, fmt.Errorf("github client for installation %d: %w", inst, err)
	}
	owner, name, _ := strings.Cut(repository, "/")
	pr, _, err := gh.PullRequests.Get(ctx, owner, name, number)
	if err != nil {
		return nil, fmt.Errorf("pull request %s#%d: %w", repository, number, err)
	}
	return pr, nil
}

// pullRequestOf is the repository and number of rec's pull request, read
// from its URL (…/owner/name/pull/N), which holds even when the config
// names another GitOps repository since; fallback when it does not parse.
func pullRequestOf(rec records.Record, fallback string) (string, int) {
	if u, err := url.Parse(rec.PRURL); err == nil {
		parts := strings.Split(strings.Trim(u.Path, "/"), "/")
		if n := len(parts); n >= 4 && parts[n-2] == "pull" {
			if num, err := strconv.Atoi(parts[n-1]); err == nil && num > 0 {
				return parts[n-4] + "/" + parts[n-3], num
			}
		}
	}
	return fallback, rec.PRNumber
}
