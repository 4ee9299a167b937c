package rollbackflow

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/records"
)

// closedMeanwhile asks GitHub about the pull request of rec, an opened
// rollback release, before it is offered as open already: when it was
// closed without merging and ripcord missed the event, rec is withdrawn
// now and returned as such. When GitHub cannot say, rec is returned as it
// is: the answer is then the one ripcord would have given anyway.
func (st *starter) closedMeanwhile(ctx context.Context, plan Plan, rec records.Record) (records.Record, error) {
	rec, _, err := st.stillOpen(ctx, plan, rec)
	return rec, err
}

// stillOpen is closedMeanwhile that also says whether GitHub has the pull
// request merged. When GitHub cannot be asked, the record stands as it is.
func (st *starter) stillOpen(ctx context.Context, plan Plan, rec records.Record) (records.Record, bool, error) {
	d := st.deps
	repo, number := pullRequestOf(rec, plan.Request.Repository)
	pr, err := pullRequestNow(ctx, d, repo, number)
	if err != nil {
		d.Log.Warn("cannot tell whether a rollback pull request is still open", "release_id", rec.ReleaseID,
			"pull_request", rec.PRURL, "err", err)
		return rec, false, nil
	}
	if pr.GetState() != "closed" {
		return rec, false, nil
	}
	if held, err := unrecordedHeld(ctx, d.DB.Read, rec.PRURL); err != nil || held {
		// A pull request whose job gave up before storing its release
		// (holdUnrecorded) has no release to withdraw: closed or merged,
		// it holds nothing any more.
		if err == nil {
			err = d.DB.InDurableTx(ctx, func(tx *sql.Tx) error { return releaseUnrecorded(ctx, tx, rec.PRURL) })
		}
		rec.State = records.StateAborted
		return rec, pr.GetMerged(), err
	}
	if pr.GetMerged() {
		return rec, true, nil
	}
	why := closedWhy(or(pr.GetHTMLURL(), rec.PRURL), "") + " (found on GitHub: ripcord missed the close)"
	var out records.Record
	err = d.DB.InDurableTx(ctx, func(tx *sql.Tx) error {
		// A withdrawn rollback whose pull request was reopened and closed
		// again no longer holds its environment.
		if err := unclaim(ctx, tx, rec.ReleaseID); err != nil {
			return err
		}
		var err error
		out, err = withdraw(ctx, tx, d, rec.ReleaseID, why, map[string]any{"pull_request": or(pr.GetHTMLURL(), rec.PRURL)})
		return err
	})
	return out, false, err
}

// pullRequestNow is pull request number of repository as GitHub has it
// now, read with the installation ripcord records for repository. A
// *Refused error says ripcord cannot ask (not installed, no App).
func pullRequestNow(ctx context.Context, d pipeline.Deps, repository string, number int) (*github.PullRequest, error) {
	inst, err := installationOf(ctx, d, repository)
	if err != nil {
		return nil, err
	}
	gh, err := d.GitHub.NewInstallationClient(inst)
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
