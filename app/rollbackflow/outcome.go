package rollbackflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/commands"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/repoconfig"
	"github.com/ripcord/ripcord/rollbackpr"
)

// start decides a rollback asked for in a comment or with a button and
// returns the answer and the job to queue. A rollback that is open already
// is answered with its pull request instead.
func (st *starter) start(ctx context.Context, gh *github.Client, cfg *repoconfig.Config, repository string, s Start, reply *ReplyTo) (commands.Outcome, error) {
	plan, open, err := st.begin(ctx, gh, cfg, repository, s)
	var refused *Refused
	if errors.As(err, &refused) {
		return commands.Outcome{Reply: "Not rolling back: " + refused.Reason + "."}, nil
	}
	if err != nil {
		return commands.Outcome{}, err
	}
	if open != nil {
		return commands.Outcome{Reply: fmt.Sprintf("This rollback is open already: release `%s`, pull request %s.", open.ReleaseID, open.PRURL)}, nil
	}
	return commands.Outcome{
		Reply: startedText(plan),
		Commit: func(ctx context.Context, tx *sql.Tx) error {
			q, err := st.queue(ctx, tx, argsFor(plan, reply))
			if err != nil || !q.Duplicate || reply == nil {
				return err
			}
			// The job of an earlier request (another comment, the button,
			// the API) opens this rollback and answers only that request:
			// the link promised here would never come.
			return st.queueReply(ctx, tx, reply, fmt.Sprintf("This rollback is being opened already, for an earlier request: "+
				"release `%s` will link its pull request once it is open%s.", plan.Record.ReleaseID, releaseLink(plan)))
		},
	}, nil
}

// begin decides s; open is the rollback's release record when the same
// rollback is open already (nil otherwise), so nothing new is queued. An
// earlier attempt whose pull request was closed without merging does not
// count: the next attempt is decided instead (see attempt). Another
// rollback whose pull request is open in the same app, environment and
// cluster (another target, or the same one over another release) refuses
// s, naming it (inFlight).
func (st *starter) begin(ctx context.Context, gh *github.Client, cfg *repoconfig.Config, repository string, s Start) (Plan, *records.Record, error) {
	plan, in, err := st.prepare(ctx, gh, cfg, repository, s)
	if err != nil {
		return Plan{}, nil, err
	}
	plan, open, err := st.attempt(ctx, in, plan, true)
	if err != nil || open != nil {
		return plan, open, err
	}
	if err := st.inFlight(ctx, plan); err != nil {
		return Plan{}, nil, err
	}
	return plan, nil, nil
}

// inFlight refuses plan when another rollback of its app, environment and
// cluster has its pull request open: its target is another branch, so a
// second pull request would be open beside it, and merging both deploys
// two rollbacks one after the other. A release whose pull request was
// merged is not in the way (it is deploying); one whose close ripcord
// missed is withdrawn now, as attempt does for the same rollback.
func (st *starter) inFlight(ctx context.Context, plan Plan) error {
	r := plan.Record
	fail := func(err error) error {
		return fmt.Errorf("open rollbacks of %s in %s/%s: %w", r.App, r.Environment, r.Cluster, err)
	}
	rows, err := st.deps.DB.Read.QueryContext(ctx, `SELECT release_id FROM records
		WHERE kind = $1 AND app = $2 AND environment = $3 AND cluster = $4 AND state = $5
		AND merged_at IS NULL AND pr_number > 0 AND release_id <> $6
		ORDER BY created_at DESC, release_id DESC`,
		string(records.KindRollback), r.App, r.Environment, r.Cluster, string(records.StateOpened), r.ReleaseID)
	if err != nil {
		return fail(err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fail(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	for _, id := range ids {
		rec, err := st.deps.Records.Get(ctx, id)
		if errors.Is(err, records.ErrNotFound) {
			continue
		}
		if err != nil {
			return fail(err)
		}
		rec, merged, err := st.stillOpen(ctx, plan, rec)
		if err != nil {
			return fail(err)
		}
		if merged || rec.State != records.StateOpened {
			continue
		}
		return &Refused{Open: &rec, Reason: fmt.Sprintf("rollback pull request %s (release `%s`, back to %s) of %s in %s/%s is open already, "+
			"and one rollback pull request at a time may be open per environment: merge it, or close it first and ask again",
			or(rec.PRURL, fmt.Sprintf("#%d", rec.PRNumber)), rec.ReleaseID, rollbackpr.ShortSHA(rec.GitRevision), r.App, r.Environment, r.Cluster)}
	}
	return st.beingOpened(ctx, plan)
}

// beingOpened refuses plan when the job of another rollback of its app,
// environment and cluster has not opened its pull request yet (GitHub is
// slow or down, and the job retries): once GitHub is back both would open
// their pull requests. A job that gave up is cancelled or discarded, and
// no longer in the way.
func (st *starter) beingOpened(ctx context.Context, plan Plan) error {
	r := plan.Record
	arg := func(path ...string) string {
		if st.deps.DB.Dialect == store.Postgres {
			return "args #>> '{" + strings.Join(path, ",") + "}'"
		}
		return "json_extract(args, '$." + strings.Join(path, ".") + "')"
	}
	var id, rev string
	err := st.deps.DB.Read.QueryRowContext(ctx, `SELECT `+arg("release_id")+`, COALESCE(`+arg("plan", "record", "git_revision")+`, '')
		FROM river_job WHERE kind = $1 AND state IN ('available', 'pending', 'retryable', 'running', 'scheduled')
		AND `+arg("plan", "record", "app")+` = $2 AND `+arg("plan", "record", "environment")+` = $3
		AND `+arg("plan", "record", "cluster")+` = $4 AND `+arg("release_id")+` <> $5
		ORDER BY id LIMIT 1`, PullRequestArgs{}.Kind(), r.App, r.Environment, r.Cluster, r.ReleaseID).Scan(&id, &rev)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("rollbacks of %s in %s/%s being opened: %w", r.App, r.Environment, r.Cluster, err)
	}
	open := records.Record{ReleaseID: id, App: r.App, Environment: r.Environment, Cluster: r.Cluster, Kind: records.KindRollback, GitRevision: rev}
	return &Refused{Open: &open, Reason: fmt.Sprintf("rollback `%s` (back to %s) of %s in %s/%s is being opened already (its pull request is not open yet), "+
		"and one rollback pull request at a time may be open per environment: wait for its pull request and merge it, or close it, then ask again",
		id, rollbackpr.ShortSHA(rev), r.App, r.Environment, r.Cluster)}
}

// maxAttempts bounds how often the same rollback is opened again after its
// pull requests were closed without merging.
const maxAttempts = 20

// attempt returns the plan of the first attempt of this rollback that was
// not withdrawn, with its record when it exists (open: nothing to queue).
// With ask, an opened record's pull request is looked up on GitHub first:
// when ripcord missed its close event, the release is withdrawn now rather
// than offered as "open already" for ever.
func (st *starter) attempt(ctx context.Context, in Input, plan Plan, ask bool) (Plan, *records.Record, error) {
	for n := max(in.Attempt, 1); ; n++ {
		rec, err := st.deps.Records.Get(ctx, plan.Record.ReleaseID)
		if errors.Is(err, records.ErrNotFound) {
			return plan, nil, nil
		}
		if err != nil {
			return Plan{}, nil, err
		}
		if ask && rec.State == records.StateOpened && rec.PRNumber > 0 {
			if rec, err = st.closedMeanwhile(ctx, plan, rec); err != nil {
				return Plan{}, nil, err
			}
		}
		if !rec.Withdrawn() {
			return plan, &rec, nil
		}
		if n >= maxAttempts {
			return Plan{}, nil, refuse("this rollback's pull request was closed without merging %d times; roll back to another release with `to <release-id>`", n)
		}
		in.Attempt = n + 1
		if plan, err = Decide(in); err != nil {
			return Plan{}, nil, err
		}
	}
}

// permit is the permission check every person's way to start a rollback
// shares: the user's permission on repository, read through its
// installation client, against commands.rollback in cfg (default write).
func permit(ctx context.Context, gh *github.Client, cfg *repoconfig.Config, repository, user string) (commands.Verdict, error) {
	need, _ := cfg.CommandPermission(commands.Rollback)
	return commands.CheckPermission(ctx, gh.Repositories, repository, user, commands.Rollback, need)
}

func startedText(p Plan) string {
	e := p.Request.Rollback.Eligibility
	verdict := "an eligible rollback target"
	if !e.Eligible {
		verdict = "**not** an eligible rollback target (" + e.Reason + "), so it is an ordinary promotion and gets every gate"
	}
	return fmt.Sprintf("Rolling %s back in %s: release `%s` replaces `%s` with `%s` (%s), %s. Opening the pull request on `%s` in %s; I will post the link here.",
		p.Record.App, p.Record.Environment, p.Record.ReleaseID, p.Record.RollbackOf, p.Target,
		rollbackpr.ShortSHA(p.Record.GitRevision), verdict, branchOf(p), p.Request.Repository)
}

// queueReply answers reply's request where it was made, as the
// pull-request job would have.
func (st *starter) queueReply(ctx context.Context, tx *sql.Tx, reply *ReplyTo, body string) error {
	return answer(ctx, tx, st.deps.River(), reply, body)
}

// releaseLink is " (<url>)", the API address of p's release, when the
// server knows its public URL; "" otherwise.
func releaseLink(p Plan) string {
	for _, l := range p.Request.Rollback.Links {
		if l.Text == "rollback release "+p.Record.ReleaseID {
			return " (" + l.URL + ")"
		}
	}
	return ""
}
