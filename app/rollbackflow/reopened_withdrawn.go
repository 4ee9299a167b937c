package rollbackflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/commands"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/rollbackpr"
)

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
	if open, err := h.asOnGitHub(ctx, d, ev); err != nil || !open {
		return nil, err
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
