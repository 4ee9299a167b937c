package rollbackflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/commands"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/rollbackpr"
)

// supersededCondition selects, in rollbacksOf, rollback releases that
// never ran (no fact named them: withdrawn when their pull request was
// closed) and that a newer release of the environment has passed since
// (superseded, or rolled back): merging their pull request now deploys an
// old target over what runs.
const supersededCondition = "state IN ('" + string(records.StateSuperseded) + "', '" + string(records.StateRolledBack) +
	"') AND last_fact_at IS NULL"

// staleRollback is a rollback pull request reopened whose merge would
// deploy an old target: what ripcord knows of it.
type staleRollback struct {
	// releaseID is the rollback's release; empty when ripcord has no
	// record of it (its job gave up after opening the pull request).
	releaseID  string
	rollbackOf string
	// target says what merging deploys.
	target          string
	app, env, clust string
}

// reopenedStale answers the reopening of a rollback pull request that is
// not a withdrawn rollback: one whose withdrawn release a newer release
// has superseded since, or a ripcord rollback pull request that has no
// release at all (its job gave up after opening it), found by what ripcord
// writes into it, while the release it rolled back no longer runs. Merging
// either deploys an old target over the release that runs: ripcord says
// so on the pull request, with what runs now, asks for a new rollback
// instead, and writes a manual_intervention_required audit event. It
// closes nothing a person reopened, and the pull request does not hold the
// environment: the new rollback it asks for must not be refused for it.
func (h closedHandler) reopenedStale(ctx context.Context, d pipeline.Delivery, ev github.PullRequestEvent) (pipeline.Commit, error) {
	pr, repo := ev.GetPullRequest(), ev.GetRepo().GetFullName()
	ids, err := h.rollbacksOf(ctx, repo, pr.GetHTMLURL(), pr.GetNumber(), supersededCondition)
	if err != nil {
		return nil, err
	}
	var stale staleRollback
	if len(ids) > 0 {
		rec, err := h.deps.Records.Get(ctx, ids[0])
		if err != nil {
			return nil, fmt.Errorf("superseded rollback %s: %w", ids[0], err)
		}
		stale = staleRollback{releaseID: rec.ReleaseID, rollbackOf: rec.RollbackOf, app: rec.App, env: rec.Environment,
			clust: rec.Cluster, target: imageAt(rec.Image, rec.GitRevision)}
	} else {
		// Any record of the pull request means ripcord follows it already.
		known, err := h.rollbacksOf(ctx, repo, pr.GetHTMLURL(), pr.GetNumber(), "1 = 1")
		if err != nil || len(known) > 0 {
			return nil, err
		}
		var ok bool
		if stale, ok, err = h.unrecorded(ctx, ev); err != nil || !ok {
			return nil, err
		}
	}
	newest, err := h.deps.Records.NewestRan(ctx, 1, []records.Target{{App: stale.app, Environment: stale.env, Cluster: stale.clust}})
	if err != nil {
		return nil, err
	}
	current, ok := running(newest)
	if stale.releaseID == "" && (!ok || current.ReleaseID == stale.rollbackOf) {
		// The release it rolls back still runs (or nothing ran): merging it
		// rolls back what it was opened for, so it is not stale.
		return nil, nil
	}
	return h.staleComment(d, ev, stale, current, ok), nil
}

// unrecorded reads ev's pull request as a ripcord rollback pull request
// without a release: its branch and title are the ones rollbackpr gives,
// it comes from the repository itself (not a fork), and its head commit
// carries ripcord's trailers, which name the release it rolls back. ok is
// false for any other pull request, or when that release is unknown.
func (h closedHandler) unrecorded(ctx context.Context, ev github.PullRequestEvent) (staleRollback, bool, error) {
	pr, repo := ev.GetPullRequest(), ev.GetRepo().GetFullName()
	head := pr.GetHead()
	if !strings.HasPrefix(head.GetRef(), rollbackpr.BranchPrefix) || !strings.HasPrefix(pr.GetTitle(), rollbackpr.TitlePrefix+" ") ||
		!strings.EqualFold(head.GetRepo().GetFullName(), repo) || head.GetSHA() == "" {
		return staleRollback{}, false, nil
	}
	gh, err := h.deps.GitHub.NewInstallationClient(ev.GetInstallation().GetID())
	if err != nil {
		return staleRollback{}, false, fmt.Errorf("github client for installation %d: %w", ev.GetInstallation().GetID(), err)
	}
	owner, name, _ := strings.Cut(repo, "/")
	commit, _, err := gh.Git.GetCommit(ctx, owner, name, head.GetSHA())
	if err != nil {
		return staleRollback{}, false, fmt.Errorf("head commit of %s: %w", pr.GetHTMLURL(), err)
	}
	trailers := rollbackpr.ParseTrailers(commit.GetMessage())
	of := trailers[rollbackpr.TrailerRollbackOf]
	if trailers[rollbackpr.TrailerKind] != rollbackpr.KindRollback || of == "" {
		return staleRollback{}, false, nil
	}
	rec, err := h.deps.Records.Get(ctx, of)
	if errors.Is(err, records.ErrNotFound) {
		return staleRollback{}, false, nil
	}
	if err != nil {
		return staleRollback{}, false, fmt.Errorf("release %s rolled back by %s: %w", of, pr.GetHTMLURL(), err)
	}
	// The title ends with the target's short revision ("… to <sha8>").
	target := pr.GetTitle()[strings.LastIndex(pr.GetTitle(), " ")+1:]
	return staleRollback{rollbackOf: of, app: rec.App, env: rec.Environment, clust: rec.Cluster, target: "`" + target + "`"}, true, nil
}

// staleComment says on ev's pull request, and in the audit trail, that
// merging it deploys stale's old target over current (ran: whether any
// release ran), and that a new rollback is to be asked for instead.
func (h closedHandler) staleComment(d pipeline.Delivery, ev github.PullRequestEvent, stale staleRollback,
	current records.Record, ran bool) pipeline.Commit {
	pr, by := ev.GetPullRequest(), ev.GetSender().GetLogin()
	what := "ripcord withdrew this rollback (release `" + stale.releaseID + "`) when this pull request was closed, " +
		"and a newer release of " + stale.app + " in " + stale.env + "/" + stale.clust + " has run since"
	if stale.releaseID == "" {
		what = "ripcord has no release for this rollback pull request (its job gave up after opening it), and `" +
			stale.rollbackOf + "`, the release it rolls back, no longer runs in " + stale.env + "/" + stale.clust
	}
	now := "no release of it is known to have run"
	if ran {
		now = "`" + current.ReleaseID + "` runs now (" + imageAt(current.Image, current.GitRevision) + ")"
	}
	body := fmt.Sprintf("This rollback is stale: %s. Merging it would deploy %s over the release that runs: %s. "+
		"Do not merge it: close it, and ask for a new rollback instead (`/ripcord rollback [to RELEASE_ID] reason`, "+
		"`ripcord rollback` or `POST /api/v1/rollbacks`), which is decided against what runs now. "+
		"ripcord does not close a pull request a person reopened.", what, stale.target, now)
	msg := fmt.Sprintf("stale rollback pull request %s (rollback of %s) was reopened by @%s: merging it would deploy %s "+
		"over %s; a new rollback must be asked for instead", pr.GetHTMLURL(), stale.rollbackOf, by, stale.target,
		or(current.ReleaseID, "no release that ran"))
	subject := or(stale.releaseID, stale.rollbackOf)
	return func(ctx context.Context, tx *sql.Tx) error {
		err := h.deps.Records.InsertAudit(ctx, tx, records.AuditEvent{Type: records.AuditManualInterventionRequired,
			ReleaseID: subject, At: h.deps.Now(), Message: msg,
			Data: map[string]any{"pull_request": pr.GetHTMLURL(), "reopened_by": by, "rollback_release_id": stale.releaseID,
				"running": current.ReleaseID, "delivery_id": d.ID}})
		if err != nil {
			return err
		}
		// Its hold, if a missed close left it (holdUnrecorded), ends: the
		// new rollback asked for must not be refused for it.
		if stale.releaseID == "" {
			if err := releaseUnrecorded(ctx, tx, pr.GetHTMLURL()); err != nil {
				return err
			}
		}
		h.deps.Log.Warn("stale rollback pull request reopened", "pull_request", pr.GetHTMLURL(),
			"release_id", stale.releaseID, "rollback_of", stale.rollbackOf, "running", current.ReleaseID)
		return commands.QueueReply(ctx, tx, h.deps.River(), commands.ReplyArgs{Repository: ev.GetRepo().GetFullName(),
			Number: pr.GetNumber(), InstallationID: ev.GetInstallation().GetID(), Key: "reopened-stale-" + d.ID, Body: body})
	}
}

// imageAt names what a release deploys: its image and short revision.
func imageAt(image, revision string) string {
	out := "`" + image + "`"
	if rev := rollbackpr.ShortSHA(revision); rev != "" {
		out += " (" + rev + ")"
	}
	return out
}
