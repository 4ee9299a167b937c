package rollbackflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/rollbackpr"
)

// One rollback pull request at a time per app, environment and cluster:
// another target is another branch, so a second pull request would be open
// beside the first, and merging both deploys two rollbacks one after the
// other. A rollback is in the way from the moment its job is queued (being
// opened) until its pull request is merged or closed (open), and again
// when a person reopens its closed pull request and nothing else is in
// the way then (reclaim), until that pull request is merged or closed.
//
// inFlight checks before anything is written, and may ask GitHub whether
// an open rollback's pull request was closed or merged meanwhile. claim
// checks again, from the database alone, in the transaction that queues the
// job, serialised with every other claim of the environment (PostgreSQL:
// a transaction-scoped advisory lock; SQLite: its single writer, which
// BEGIN IMMEDIATE takes at once): two requests for different targets that
// both passed inFlight cannot both queue their jobs.

// querier is a pool or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// inFlight refuses plan when another rollback of its app, environment and
// cluster has its pull request open or is being opened. A release whose
// pull request was merged is not in the way (it is deploying); one whose
// close ripcord missed is withdrawn now, as attempt does for the same
// rollback. merged are the rollbacks GitHub says are merged though their
// records do not know it yet, for claim.
func (st *starter) inFlight(ctx context.Context, plan Plan) (merged []string, err error) {
	open, merged, err := st.asked(ctx, plan)
	if err != nil {
		return nil, err
	}
	for _, rec := range open {
		if rec.State == records.StateOpened {
			return nil, openRefusal(plan, rec)
		}
	}
	return merged, beingOpened(ctx, st.deps.DB.Read, st.deps.DB.Dialect, plan)
}

// asked reads the other rollbacks of plan's app, environment and cluster
// whose records say their pull requests are open, and asks GitHub about
// each (stillOpen): merged are those GitHub says are merged, open the
// others, as they are now (one closed meanwhile is withdrawn).
func (st *starter) asked(ctx context.Context, plan Plan) (open []records.Record, merged []string, err error) {
	r := plan.Record
	recs, err := openRollbacks(ctx, st.deps.DB.Read, plan)
	if err != nil {
		return nil, nil, err
	}
	for _, rec := range recs {
		rec, isMerged, err := st.stillOpen(ctx, plan, rec)
		if err != nil {
			return nil, nil, fmt.Errorf("open rollbacks of %s in %s/%s: %w", r.App, r.Environment, r.Cluster, err)
		}
		if isMerged {
			merged = append(merged, rec.ReleaseID)
			continue
		}
		open = append(open, rec)
	}
	return open, merged, nil
}

// claim checks, in tx, the transaction that queues plan's job, that no
// other rollback of its environment has been queued or opened since
// inFlight looked; merged are inFlight's. It takes the environment's lock
// first, so of two claims the second sees the first's job. A refusal is a
// *Refused naming the other rollback, as inFlight's; nothing is written.
func (st *starter) claim(ctx context.Context, tx *sql.Tx, plan Plan, merged []string) error {
	return claimIn(ctx, tx, st.deps.DB.Dialect, plan, merged)
}

// claimIn is claim for a caller without a starter (the pull_request
// handler, for a reopened rollback pull request).
func claimIn(ctx context.Context, tx *sql.Tx, dialect store.Dialect, plan Plan, merged []string) error {
	r := plan.Record
	if dialect == store.Postgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`,
			"ripcord-rollback/"+r.App+"/"+r.Environment+"/"+r.Cluster); err != nil {
			return fmt.Errorf("lock the rollbacks of %s in %s/%s: %w", r.App, r.Environment, r.Cluster, err)
		}
	}
	open, err := openRollbacks(ctx, tx, plan)
	if err != nil {
		return err
	}
	for _, rec := range open {
		if !slices.Contains(merged, rec.ReleaseID) {
			return openRefusal(plan, rec)
		}
	}
	return beingOpened(ctx, tx, dialect, plan)
}

// openRollbacks are the other rollbacks of plan's app, environment and
// cluster whose records say their pull requests are open, newest first:
// opened ones whose pull requests are not merged, and withdrawn ones whose
// pull requests a person reopened and that hold the environment again
// (reclaim), until merged or closed again, and pull requests opened by a
// job that gave up before their releases could be stored (holdUnrecorded),
// until closed or merged. All are returned as opened.
func openRollbacks(ctx context.Context, q querier, plan Plan) ([]records.Record, error) {
	r := plan.Record
	fail := func(err error) ([]records.Record, error) {
		return nil, fmt.Errorf("open rollbacks of %s in %s/%s: %w", r.App, r.Environment, r.Cluster, err)
	}
	rows, err := q.QueryContext(ctx, `SELECT release_id, pr_url, pr_number, git_revision, created_at FROM records
		WHERE kind = $1 AND app = $2 AND environment = $3 AND cluster = $4
		AND (state = $5 OR (state = 'aborted' AND last_fact_at IS NULL
			AND release_id IN (SELECT release_id FROM rollback_reopened)))
		AND merged_at IS NULL AND pr_number > 0 AND release_id <> $6
		UNION ALL
		SELECT release_id, pr_url, pr_number, git_revision, created_at FROM rollback_unrecorded
		WHERE app = $2 AND environment = $3 AND cluster = $4 AND release_id <> $6
		ORDER BY created_at DESC, release_id DESC`,
		string(records.KindRollback), r.App, r.Environment, r.Cluster, string(records.StateOpened), r.ReleaseID)
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	var out []records.Record
	for rows.Next() {
		rec := records.Record{App: r.App, Environment: r.Environment, Cluster: r.Cluster,
			Kind: records.KindRollback, State: records.StateOpened}
		var created int64
		if err := rows.Scan(&rec.ReleaseID, &rec.PRURL, &rec.PRNumber, &rec.GitRevision, &created); err != nil {
			return fail(err)
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	return out, nil
}

func openRefusal(plan Plan, rec records.Record) *Refused {
	r := plan.Record
	return &Refused{Open: &rec, Reason: fmt.Sprintf("rollback pull request %s (release `%s`, back to %s) of %s in %s/%s is open already, "+
		"and one rollback pull request at a time may be open per environment: merge it, or close it first and ask again",
		or(rec.PRURL, fmt.Sprintf("#%d", rec.PRNumber)), rec.ReleaseID, rollbackpr.ShortSHA(rec.GitRevision), r.App, r.Environment, r.Cluster)}
}

// beingOpened refuses plan when the job of another rollback of its app,
// environment and cluster has not opened its pull request yet (GitHub is
// slow or down, and the job retries): once GitHub is back both would open
// their pull requests. A job that gave up is cancelled or discarded, and
// no longer in the way.
func beingOpened(ctx context.Context, q querier, dialect store.Dialect, plan Plan) error {
	r := plan.Record
	arg := func(path ...string) string {
		if dialect == store.Postgres {
			return "args #>> '{" + strings.Join(path, ",") + "}'"
		}
		return "json_extract(args, '$." + strings.Join(path, ".") + "')"
	}
	var id, rev string
	err := q.QueryRowContext(ctx, `SELECT `+arg("release_id")+`, COALESCE(`+arg("plan", "record", "git_revision")+`, '')
		FROM river_job WHERE kind = $1 AND state IN (`+store.RiverLiveStates+`)
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

// reclaim makes rec, a withdrawn rollback whose pull request a person
// reopened, hold its environment's one rollback pull request again, in tx,
// unless another rollback holds it already (claim): then that one's
// *Refused is returned, naming it, and nothing is written. Reopening
// revives no release (it stays withdrawn until a fact names it), but an
// open rollback pull request is in the way of a second one all the same.
func reclaim(ctx context.Context, tx *sql.Tx, dialect store.Dialect, rec records.Record, by string, now time.Time) error {
	if err := claimIn(ctx, tx, dialect, Plan{Record: rec}, nil); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO rollback_reopened (release_id, reopened_at, reopened_by) VALUES ($1, $2, $3)
		ON CONFLICT (release_id) DO NOTHING`, rec.ReleaseID, store.Micros(now), by)
	if err != nil {
		return fmt.Errorf("claim the reopened rollback %s: %w", rec.ReleaseID, err)
	}
	return nil
}

// unclaim ends the hold of withdrawn rollbacks ids whose reopened pull
// request was closed again, in tx; nothing happens for the others.
func unclaim(ctx context.Context, tx *sql.Tx, ids ...string) error {
	for _, id := range ids {
		if _, err := tx.ExecContext(ctx, `DELETE FROM rollback_reopened WHERE release_id = $1`, id); err != nil {
			return fmt.Errorf("release the reopened rollback %s: %w", id, err)
		}
	}
	return nil
}

// holdUnrecorded makes the pull request a gave up on, opened at url
// (number) but its release not stored, hold its environment's one
// rollback pull request, in tx: no record says it is open, and another
// target would be opened beside it. The job held the environment while it
// ran (beingOpened); tx commits before the job ends, so no other rollback
// is queued between the two.
func holdUnrecorded(ctx context.Context, tx *sql.Tx, a PullRequestArgs, url string, number int, now time.Time) error {
	r := a.Plan.Record
	_, err := tx.ExecContext(ctx, `INSERT INTO rollback_unrecorded
		(pr_url, release_id, app, environment, cluster, pr_number, git_revision, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (pr_url) DO NOTHING`,
		url, a.ReleaseID, r.App, r.Environment, r.Cluster, number, r.GitRevision, store.Micros(now))
	if err != nil {
		return fmt.Errorf("hold the environment for the unrecorded rollback pull request %s: %w", url, err)
	}
	return nil
}

// releaseUnrecorded ends the hold of the unrecorded rollback pull request
// at url (holdUnrecorded), closed or merged, in tx; nothing happens for
// any other pull request.
func releaseUnrecorded(ctx context.Context, tx *sql.Tx, url string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM rollback_unrecorded WHERE pr_url = $1`, url); err != nil {
		return fmt.Errorf("release the unrecorded rollback pull request %s: %w", url, err)
	}
	return nil
}

// unrecordedHeld reports whether the pull request at url is one whose job
// gave up before storing its release, and that holds its environment
// (holdUnrecorded).
func unrecordedHeld(ctx context.Context, q querier, url string) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM rollback_unrecorded WHERE pr_url = $1`, url).Scan(&n); err != nil {
		return false, fmt.Errorf("unrecorded rollback pull request %s: %w", url, err)
	}
	return n > 0, nil
}
