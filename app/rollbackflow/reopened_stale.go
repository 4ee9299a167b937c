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
	stale, current, ran, ok, err := h.stale(ctx, ev)
	if err != nil || !ok {
		return nil, err
	}
	if open, err := h.asOnGitHub(ctx, d, ev); err != nil || !open {
		return nil, err
	}
	return h.staleComment(d, ev, stale, current, ran), nil
}

// stale finds what ripcord knows of ev's pull request when it is a stale
// rollback's (reopenedStale): ok is false for any other pull request.
// current is the release that runs now; ran says whether any did.
func (h closedHandler) stale(ctx context.Context, ev github.PullRequestEvent) (stale staleRollback, current records.Record, ran, ok bool, err error) {
	pr, repo := ev.GetPullRequest(), ev.GetRepo().GetFullName()
	ids, err := h.rollbacksOf(ctx, repo, pr.GetHTMLURL(), pr.GetNumber(), supersededCondition)
	if err != nil {
		return stale, current, false, false, err
	}
	if len(ids) > 0 {
		rec, err := h.deps.Records.Get(ctx, ids[0])
		if err != nil {
			return stale, current, false, false, fmt.Errorf("superseded rollback %s: %w", ids[0], err)
		}
		stale = staleRollback{releaseID: rec.ReleaseID, rollbackOf: rec.RollbackOf, app: rec.App, env: rec.Environment,
			clust: rec.Cluster, target: imageAt(rec.Image, rec.GitRevision)}
	} else {
		// Any record of the pull request means ripcord follows it already.
		known, err := h.rollbacksOf(ctx, repo, pr.GetHTMLURL(), pr.GetNumber(), "1 = 1")
		if err != nil || len(known) > 0 {
			return stale, current, false, false, err
		}
		if stale, ok, err = h.unrecorded(ctx, ev); err != nil || !ok {
			return stale, current, false, false, err
		}
	}
	newest, err := h.deps.Records.NewestRan(ctx, 1, []records.Target{{App: stale.app, Environment: stale.env, Cluster: stale.clust}})
	if err != nil {
		return stale, current, false, false, err
	}
	current, ran = running(newest)
	if stale.releaseID == "" && (!ran || current.ReleaseID == stale.rollbackOf) {
		// The release it rolls back still runs (or nothing ran): merging it
		// rolls back what it was opened for, so it is not stale.
		return stale, current, ran, false, nil
	}
	return stale, current, ran, true, nil
}

// unrecorded reads ev's pull request as a ripcord rollback pull request
// without a release: its branch and title are the ones rollbackpr gives,
// it comes from the repository itself (not a fork), and its rollback
// commit carries ripcord's trailers, which name the release it rolls back.
// That commit is found as Open finds it (rollbackpr.RollbackUnder): at the
// head, or under commits a person pushed on top of it. ok is false for any
// other pull request, or when that release is unknown.
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
	commit, _, err := rollbackpr.RollbackUnder(ctx, rollbackpr.NewGitHub(gh), owner, name, head.GetSHA(), pr.GetBase().GetSHA())
	if err != nil {
		return staleRollback{}, false, fmt.Errorf("rollback commit of %s: %w", pr.GetHTMLURL(), err)
	}
	if commit == nil {
		return staleRollback{}, false, nil
	}
	trailers := rollbackpr.ParseTrailers(commit.GetCommit().GetMessage())
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
	target := "`" + unrecordedTarget(pr, rec.Environment) + "`"
	return staleRollback{rollbackOf: of, app: rec.App, env: rec.Environment, clust: rec.Cluster, target: target}, true, nil
}

// unrecordedTarget is the short revision pr, a rollback pull request of env
// without a release, deploys. Its branch name says it (the trailers of its
// rollback commit do not); the title ends with it too ("… to <sha8>"), but
// a person may have edited the title, so it is read only when the branch
// is not named as ripcord names rollback branches.
func unrecordedTarget(pr *github.PullRequest, env string) string {
	if sha8, ok := rollbackpr.BranchTarget(pr.GetHead().GetRef(), env); ok {
		return sha8
	}
	return pr.GetTitle()[strings.LastIndex(pr.GetTitle(), " ")+1:]
}

// why says why stale is stale, for its pull request's comments.
func (stale staleRollback) why() string {
	if stale.releaseID == "" {
		return "ripcord has no release for this rollback pull request (its job gave up after opening it), and `" +
			stale.rollbackOf + "`, the release it rolls back, no longer runs in " + stale.env + "/" + stale.clust
	}
	return "ripcord withdrew this rollback (release `" + stale.releaseID + "`) when this pull request was closed, " +
		"and a newer release of " + stale.app + " in " + stale.env + "/" + stale.clust + " has run since"
}

// runningNow names current, the release that runs (ran: whether any did).
func runningNow(current records.Record, ran bool) string {
	if !ran {
		return "no release of it is known to have run"
	}
	return "`" + current.ReleaseID + "` runs now (" + imageAt(current.Image, current.GitRevision) + ")"
}

// staleComment says on ev's pull request, and in the audit trail, that
// merging it deploys stale's old target over current (ran: whether any
// release ran), and that a new rollback is to be asked for instead.
func (h closedHandler) staleComment(d pipeline.Delivery, ev github.PullRequestEvent, stale staleRollback,
	current records.Record, ran bool) pipeline.Commit {
	pr, by := ev.GetPullRequest(), ev.GetSender().GetLogin()
	body := fmt.Sprintf("This rollback is stale: %s. Merging it would deploy %s over the release that runs: %s. "+
		"Do not merge it: close it, and ask for a new rollback instead (`/ripcord rollback [to RELEASE_ID] reason`, "+
		"`ripcord rollback` or `POST /api/v1/rollbacks`), which is decided against what runs now. "+
		"ripcord does not close a pull request a person reopened.", stale.why(), stale.target, runningNow(current, ran))
	msg := fmt.Sprintf("stale rollback pull request %s (rollback of %s) was reopened by @%s: merging it would deploy %s "+
		"over %s; a new rollback must be asked for instead", pr.GetHTMLURL(), stale.rollbackOf, by, stale.target,
		or(current.ReleaseID, "no release that ran"))
	return func(ctx context.Context, tx *sql.Tx) error {
		err := h.staleAudit(ctx, tx, d, ev, stale, current, msg, map[string]any{"reopened_by": by})
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

// mergedStale answers the merge of a stale rollback's pull request
// (reopenedStale): the release file now names its old target, which will
// deploy over the release that runs. ripcord says so on the merged pull
// request and in the audit trail, naming both, and leaves it at that: it
// rolls nothing back and reverts nothing, since which release should run
// is the people's choice, and a new rollback is theirs to ask for.
func (h closedHandler) mergedStale(ctx context.Context, d pipeline.Delivery, ev github.PullRequestEvent) (pipeline.Commit, error) {
	stale, current, ran, ok, err := h.stale(ctx, ev)
	if err != nil || !ok {
		return nil, err
	}
	pr := ev.GetPullRequest()
	by := or(pr.GetMergedBy().GetLogin(), ev.GetSender().GetLogin())
	body := fmt.Sprintf("This rollback was stale when it was merged: %s. The merge deploys %s over the release that runs: %s. "+
		"ripcord rolls nothing back and reverts nothing: if %s is not what should run, ask for a new rollback "+
		"(`/ripcord rollback [to RELEASE_ID] reason`, `ripcord rollback` or `POST /api/v1/rollbacks`) or deploy a release. "+
		"ripcord records what runs as the cluster reports it.", stale.why(), stale.target, runningNow(current, ran), stale.target)
	msg := fmt.Sprintf("stale rollback pull request %s (rollback of %s) was merged by @%s: it deploys %s over %s; "+
		"ripcord rolls nothing back", pr.GetHTMLURL(), stale.rollbackOf, by, stale.target,
		or(current.ReleaseID, "no release that ran"))
	return func(ctx context.Context, tx *sql.Tx) error {
		if noted, err := mergeNoted(ctx, tx, or(stale.releaseID, stale.rollbackOf), pr.GetHTMLURL()); err != nil || noted {
			return err
		}
		if err := h.staleAudit(ctx, tx, d, ev, stale, current, msg, map[string]any{"merged_by": by}); err != nil {
			return err
		}
		h.deps.Log.Warn("stale rollback pull request merged", "pull_request", pr.GetHTMLURL(),
			"release_id", stale.releaseID, "rollback_of", stale.rollbackOf, "running", current.ReleaseID)
		return commands.QueueReply(ctx, tx, h.deps.River(), commands.ReplyArgs{Repository: ev.GetRepo().GetFullName(),
			Number: pr.GetNumber(), InstallationID: ev.GetInstallation().GetID(), Key: fmt.Sprintf("merged-stale-%d", pr.GetNumber()), Body: body})
	}, nil
}

// staleAudit writes msg about stale's pull request to the audit trail of
// its release, or of the release it rolls back when it has none.
func (h closedHandler) staleAudit(ctx context.Context, tx *sql.Tx, d pipeline.Delivery, ev github.PullRequestEvent,
	stale staleRollback, current records.Record, msg string, data map[string]any) error {
	data["pull_request"], data["rollback_release_id"] = ev.GetPullRequest().GetHTMLURL(), stale.releaseID
	data["running"], data["delivery_id"] = current.ReleaseID, d.ID
	return h.deps.Records.InsertAudit(ctx, tx, records.AuditEvent{Type: records.AuditManualInterventionRequired,
		ReleaseID: or(stale.releaseID, stale.rollbackOf), At: h.deps.Now(), Message: msg, Data: data})
}

// imageAt names what a release deploys: its image and short revision.
func imageAt(image, revision string) string {
	out := "`" + image + "`"
	if rev := rollbackpr.ShortSHA(revision); rev != "" {
		out += " (" + rev + ")"
	}
	return out
}
