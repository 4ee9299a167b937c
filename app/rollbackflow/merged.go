package rollbackflow

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/commands"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/records"
)

// closedMerged answers the merge of a pull request: the releases opened
// for it start their stall clock (merged), the hold of a rollback pull
// request without a release ends (releaseUnrecorded), and the merge of a
// withdrawn rollback superseded by a newer one (mergedWithdrawn) or of a
// stale one (mergedStale) is said.
func (h closedHandler) closedMerged(ctx context.Context, d pipeline.Delivery, ev github.PullRequestEvent) (pipeline.Commit, error) {
	pr := ev.GetPullRequest()
	// Rollbacks without pr_url whose pull request is this one in the
	// GitOps repository are recorded with the app's repository, which
	// MarkMerged cannot match.
	ids, err := h.rollbacksOf(ctx, ev.GetRepo().GetFullName(), pr.GetHTMLURL(), pr.GetNumber(), "merged_at IS NULL")
	if err != nil {
		return nil, err
	}
	warn, err := h.mergedWithdrawn(ctx, d, ev)
	if err != nil {
		return nil, err
	}
	stale, err := h.mergedStale(ctx, d, ev)
	if err != nil {
		return nil, err
	}
	unrecorded, err := unrecordedHeld(ctx, h.deps.DB.Read, pr.GetHTMLURL())
	if err != nil {
		return nil, err
	}
	mark := h.merged(ev, ids)
	return func(ctx context.Context, tx *sql.Tx) error {
		if err := mark(ctx, tx); err != nil {
			return err
		}
		if unrecorded {
			if err := releaseUnrecorded(ctx, tx, pr.GetHTMLURL()); err != nil {
				return err
			}
		}
		for _, say := range []pipeline.Commit{warn, stale} {
			if say == nil {
				continue
			}
			if err := say(ctx, tx); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// merged starts the stall clock of the releases opened for a merged pull
// request (records.MarkMerged): they can run only now, so only now may
// the lack of a fact mean that one was lost (seed 003, decision 6).
func (h closedHandler) merged(ev github.PullRequestEvent, rollbacks []string) pipeline.Commit {
	pr := ev.GetPullRequest()
	at := pr.GetMergedAt().Time
	if at.IsZero() {
		at = h.deps.Now()
	}
	return func(ctx context.Context, tx *sql.Tx) error {
		ids, err := h.deps.Records.MarkMerged(ctx, tx, ev.GetRepo().GetFullName(), pr.GetHTMLURL(), pr.GetNumber(), at)
		if err != nil {
			return err
		}
		more, err := h.deps.Records.MarkReleasesMerged(ctx, tx, rollbacks, at)
		ids = append(ids, more...)
		if err == nil && len(ids) > 0 {
			h.deps.Log.Info("pull request merged: releases wait for facts from now", "pull_request", pr.GetHTMLURL(),
				"release_ids", ids)
		}
		return err
	}
}

// mergedWithdrawn answers the merge of the pull request of a withdrawn
// rollback (reopened and merged) while a newer rollback of the same
// release exists. The release file now names the withdrawn release, so it
// is what will run: the facts naming it move it on as for any withdrawn
// release. ripcord writes that to its audit trail and warns on the newer
// rollback's pull request, whose merge would deploy a second rollback of
// the same release; which one to keep is the people's choice.
func (h closedHandler) mergedWithdrawn(ctx context.Context, d pipeline.Delivery, ev github.PullRequestEvent) (pipeline.Commit, error) {
	pr := ev.GetPullRequest()
	ids, err := h.rollbacksOf(ctx, ev.GetRepo().GetFullName(), pr.GetHTMLURL(), pr.GetNumber(),
		withdrawnCondition)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	old, newer, err := h.supersededBy(ctx, ids[0])
	if err != nil || newer == nil {
		return nil, err
	}
	repo, number := pullRequestOf(*newer, ev.GetRepo().GetFullName())
	inst := ev.GetInstallation().GetID()
	if !strings.EqualFold(repo, ev.GetRepo().GetFullName()) {
		if inst, err = pipeline.InstallationOf(ctx, h.deps.DB.Read, repo); err != nil {
			return nil, err
		}
	}
	by := ev.GetPullRequest().GetMergedBy().GetLogin()
	if by == "" {
		by = ev.GetSender().GetLogin()
	}
	msg := fmt.Sprintf("pull request %s of withdrawn rollback %s was merged by @%s while rollback %s of %s is %s "+
		"(pull request %s): the release file names %s now, so it is what will run, and ripcord records it as the cluster "+
		"reports it; merging %s as well would deploy a second rollback of %s",
		pr.GetHTMLURL(), old.ReleaseID, by, newer.ReleaseID, old.RollbackOf, newer.State, or(newer.PRURL, "unknown"),
		old.ReleaseID, or(newer.PRURL, newer.ReleaseID), old.RollbackOf)
	body := fmt.Sprintf("%s, the rollback of `%s` that ripcord had withdrawn (release `%s`), was reopened and merged by @%s: "+
		"it is what will run. Merging this pull request as well would deploy a second rollback of `%s`; close it unless "+
		"you want this one to replace it.", pr.GetHTMLURL(), old.RollbackOf, old.ReleaseID, by, old.RollbackOf)
	return func(ctx context.Context, tx *sql.Tx) error {
		if noted, err := mergeNoted(ctx, tx, old.ReleaseID, pr.GetHTMLURL()); err != nil || noted {
			return err
		}
		err := h.deps.Records.InsertAudit(ctx, tx, records.AuditEvent{Type: records.AuditManualInterventionRequired,
			ReleaseID: old.ReleaseID, At: h.deps.Now(), Message: msg,
			Data: map[string]any{"pull_request": pr.GetHTMLURL(), "merged_by": by, "superseded_by": newer.ReleaseID,
				"superseded_by_pull_request": newer.PRURL, "delivery_id": d.ID}})
		if err != nil {
			return err
		}
		h.deps.Log.Warn("withdrawn rollback's pull request merged while a newer rollback exists",
			"release_id", old.ReleaseID, "pull_request", pr.GetHTMLURL(), "newer", newer.ReleaseID)
		if number <= 0 || inst == 0 || newer.State != records.StateOpened || newer.MergedAt != nil {
			return nil // no pull request to warn on, or it is merged already
		}
		return commands.QueueReply(ctx, tx, h.deps.River(), commands.ReplyArgs{Repository: repo, Number: number,
			InstallationID: inst, Key: fmt.Sprintf("superseded-by-merge-of-%d", pr.GetNumber()), Body: body})
	}, nil
}

// mergeNoted reports whether releaseID's audit trail says already that
// pull request prURL was merged (a manual_intervention_required event
// naming it and who merged it). A pull request is merged once, so its
// merged event delivered again (posted again under a new id: GitHub signs
// the body, not the delivery id) finds it and says nothing more.
func mergeNoted(ctx context.Context, q querier, releaseID, prURL string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit_events WHERE release_id = $1 AND type = $2
		AND data->>'pull_request' = $3 AND data->>'merged_by' IS NOT NULL`,
		releaseID, string(records.AuditManualInterventionRequired), prURL).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("look for the merge of %s in %s's audit trail: %w", prURL, releaseID, err)
	}
	return n > 0, nil
}
