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

	"github.com/ripcord/ripcord/app/commands"
	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/app/deployments"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/app/recoveryflow"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/repoconfig"
	"github.com/ripcord/ripcord/rollbackpr"
)

// closedHandler ends the release of a rollback pull request that a person
// closed without merging: the release will never run, so it is withdrawn
// (records.Withdraw) and a new rollback may be opened in its place. For a
// merged pull request it records the merge on the releases opened for it,
// which starts their stall clock.
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

// withdrawnCondition selects withdrawn releases (records.Withdrawn) in
// rollbacksOf; reclaimedCondition those of them that hold their
// environment again since their pull request was reopened (reclaim).
const (
	withdrawnCondition = "state = '" + string(records.StateAborted) + "' AND last_fact_at IS NULL"
	reclaimedCondition = withdrawnCondition + " AND release_id IN (SELECT release_id FROM rollback_reopened)"
)

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

// reopened answers the reopening of a rollback pull request whose release
// ripcord withdrew when it was closed. Reopening revives nothing (a
// withdrawn release moves on only when the cluster reports it running),
// but the pull request is open again, and merging it deploys its rollback:
// it holds its environment's one rollback pull request again (reclaim), so
// that no second rollback is opened beside it. When another rollback of
// the environment holds it already (its pull request open, or being
// opened), that one keeps it: ripcord says so on the reopened pull request,
// naming the other one, and writes that to the withdrawn release's audit
// trail. When a newer rollback of the same release was opened since,
// merging both would put two rollbacks of one release in flight: ripcord
// says which rollback supersedes it, whether or not that one still holds
// the environment. It closes nothing a person reopened. A rollback pull
// request that is not a withdrawn rollback's may be a stale one
// (reopenedStale).
func (h closedHandler) reopened(ctx context.Context, d pipeline.Delivery, ev github.PullRequestEvent) (pipeline.Commit, error) {
	pr, repo := ev.GetPullRequest(), ev.GetRepo().GetFullName()
	ids, err := h.rollbacksOf(ctx, repo, pr.GetHTMLURL(), pr.GetNumber(), withdrawnCondition)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return h.reopenedStale(ctx, d, ev)
	}
	old, newer, err := h.supersededBy(ctx, ids[0])
	if err != nil {
		return nil, err
	}
	by := ev.GetSender().GetLogin()
	reply := func(ctx context.Context, tx *sql.Tx, key, body string) error {
		return commands.QueueReply(ctx, tx, h.deps.River(), commands.ReplyArgs{Repository: repo, Number: pr.GetNumber(),
			InstallationID: ev.GetInstallation().GetID(), Key: key + "-" + d.ID, Body: body})
	}
	return func(ctx context.Context, tx *sql.Tx) error {
		var held *Refused
		err := reclaim(ctx, tx, h.deps.DB.Dialect, old, by, h.deps.Now())
		if !errors.As(err, &held) && err != nil {
			return err
		}
		if newer != nil {
			if err := h.superseded(ctx, tx, d, ev, old, *newer, reply); err != nil {
				return err
			}
		}
		if held == nil {
			h.deps.Log.Info("withdrawn rollback's pull request reopened: it holds its environment again",
				"release_id", old.ReleaseID, "pull_request", pr.GetHTMLURL())
			return nil
		}
		other := held.Open
		if newer != nil && other.ReleaseID == newer.ReleaseID {
			return nil // said already: the newer rollback is the one holding the environment
		}
		return h.heldByAnother(ctx, tx, d, ev, old, *other, reply)
	}, nil
}

// heldByAnother answers the reopening of old's pull request while other,
// another rollback of its environment, has its pull request open or is
// being opened: other keeps the environment, and merging both deploys two
// rollbacks one after the other.
func (h closedHandler) heldByAnother(ctx context.Context, tx *sql.Tx, d pipeline.Delivery, ev github.PullRequestEvent,
	old, other records.Record, reply func(context.Context, *sql.Tx, string, string) error) error {
	pr := ev.GetPullRequest()
	what := "rollback pull request " + other.PRURL + " (release `" + other.ReleaseID + "`) is open"
	if other.PRURL == "" {
		what = "rollback `" + other.ReleaseID + "` is being opened (its pull request is not open yet)"
	}
	msg := fmt.Sprintf("pull request %s of withdrawn rollback %s was reopened by @%s while rollback %s of %s in %s/%s "+
		"holds the environment (pull request %s): it stays withdrawn and does not take the environment; "+
		"merging both deploys two rollbacks, so one must be closed",
		pr.GetHTMLURL(), old.ReleaseID, ev.GetSender().GetLogin(), other.ReleaseID, old.App, old.Environment, old.Cluster,
		or(other.PRURL, "not open yet"))
	body := fmt.Sprintf("ripcord withdrew this rollback (release `%s`) when this pull request was closed, and another "+
		"rollback of %s in %s/%s has been started since: %s, back to %s. One rollback pull request at a time may be "+
		"open per environment, and that one holds it. Merging both deploys two rollbacks one after the other: "+
		"close one of them. ripcord closes neither.",
		old.ReleaseID, old.App, old.Environment, old.Cluster, what, rollbackpr.ShortSHA(other.GitRevision))
	err := h.deps.Records.InsertAudit(ctx, tx, records.AuditEvent{Type: records.AuditManualInterventionRequired,
		ReleaseID: old.ReleaseID, At: h.deps.Now(), Message: msg,
		Data: map[string]any{"pull_request": pr.GetHTMLURL(), "reopened_by": ev.GetSender().GetLogin(),
			"held_by": other.ReleaseID, "held_by_pull_request": other.PRURL, "delivery_id": d.ID}})
	if err != nil {
		return err
	}
	h.deps.Log.Warn("withdrawn rollback's pull request reopened while another rollback holds its environment",
		"release_id", old.ReleaseID, "pull_request", pr.GetHTMLURL(), "held_by", other.ReleaseID)
	return reply(ctx, tx, "reopened-held", body)
}

// superseded answers the reopening of old's pull request when newer, a
// rollback of the same release, was opened after it.
func (h closedHandler) superseded(ctx context.Context, tx *sql.Tx, d pipeline.Delivery, ev github.PullRequestEvent,
	old, newer records.Record, reply func(context.Context, *sql.Tx, string, string) error) error {
	pr := ev.GetPullRequest()
	where := "release `" + newer.ReleaseID + "`"
	if newer.PRURL != "" {
		where = newer.PRURL + " (" + where + ")"
	}
	msg := fmt.Sprintf("pull request %s of withdrawn rollback %s was reopened by @%s while rollback %s of %s is %s "+
		"(pull request %s): it stays withdrawn; merging both deploys two rollbacks of %s, so one must be closed",
		pr.GetHTMLURL(), old.ReleaseID, ev.GetSender().GetLogin(), newer.ReleaseID, old.RollbackOf, newer.State,
		or(newer.PRURL, "unknown"), old.RollbackOf)
	body := fmt.Sprintf("ripcord withdrew this rollback (release `%s`) when this pull request was closed, and has "+
		"since opened %s to roll back `%s` (it is %s). Reopening does not bring `%s` back: merge the newer one and "+
		"close this pull request. Merging both deploys two rollbacks of `%s`; if this one is merged anyway, "+
		"ripcord records `%s` as what runs once the cluster reports it.",
		old.ReleaseID, where, old.RollbackOf, newer.State, old.ReleaseID, old.RollbackOf, old.ReleaseID)
	err := h.deps.Records.InsertAudit(ctx, tx, records.AuditEvent{Type: records.AuditManualInterventionRequired,
		ReleaseID: old.ReleaseID, At: h.deps.Now(), Message: msg,
		Data: map[string]any{"pull_request": pr.GetHTMLURL(), "reopened_by": ev.GetSender().GetLogin(),
			"superseded_by": newer.ReleaseID, "superseded_by_pull_request": newer.PRURL, "delivery_id": d.ID}})
	if err != nil {
		return err
	}
	h.deps.Log.Warn("withdrawn rollback's pull request reopened while a newer rollback exists",
		"release_id", old.ReleaseID, "pull_request", pr.GetHTMLURL(), "newer", newer.ReleaseID)
	return reply(ctx, tx, "reopened", body)
}

// supersededBy reads the withdrawn rollback id and the newest rollback of
// the same release opened after it that is not withdrawn (with its
// MergedAt); newer is nil when there is none.
func (h closedHandler) supersededBy(ctx context.Context, id string) (old records.Record, newer *records.Record, err error) {
	old, err = h.deps.Records.Get(ctx, id)
	if err != nil {
		return old, nil, fmt.Errorf("withdrawn rollback %s: %w", id, err)
	}
	var n records.Record
	var merged *int64
	err = h.deps.DB.Read.QueryRowContext(ctx, `SELECT release_id, pr_url, pr_number, state, merged_at FROM records
		WHERE kind = $1 AND rollback_of = $2 AND release_id <> $3 AND created_at >= $4
		AND NOT (state = 'aborted' AND last_fact_at IS NULL)
		ORDER BY created_at DESC, release_id DESC LIMIT 1`,
		string(records.KindRollback), old.RollbackOf, old.ReleaseID, store.Micros(old.CreatedAt)).
		Scan(&n.ReleaseID, &n.PRURL, &n.PRNumber, &n.State, &merged)
	if errors.Is(err, sql.ErrNoRows) {
		return old, nil, nil
	}
	if err != nil {
		return old, nil, fmt.Errorf("newer rollback of %s: %w", old.RollbackOf, err)
	}
	n.MergedAt = store.TimePtr(merged)
	return old, &n, nil
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
			InstallationID: inst, Key: "superseded-" + d.ID, Body: body})
	}, nil
}

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
	inst, err := installationOf(ctx, h.deps.DB.Read, repository)
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
	pr, err := st.pullRequest(ctx, repo, number)
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
