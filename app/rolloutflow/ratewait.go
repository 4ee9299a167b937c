package rolloutflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ripcord/ripcord/internal/store"
)

// A rollout's run polls, adoption, dispatches (of batches and of probe
// workflows) and check run all ask GitHub with the installation's token,
// and a tick comes with every run event and every poll. GitHub's rate
// limit is the installation's (its token's), so once one of those requests
// is refused for it, past what the client waits out, none of them is sent
// again for any rollout of the installation before the reset: each
// request would be spent against a limit that has not reset, and GitHub
// punishes requests sent into a secondary limit with a longer one. The
// limit is stored (rollout_rate_limits), so that ticks and jobs on other
// replicas, or after a restart, wait too; the runs not asked about are
// unread, the batches not dispatched are not claimed and the probe rounds
// not dispatched are no reading, so nothing fails meanwhile (no
// queue_timeout, no red reading, no on_failure).

// installationLimit is an installation's rate limit as a request of a
// rollout last met it: reset is when GitHub may be asked again, began
// when the episode began (the first refusal since a request got through).
// Zero: none met.
type installationLimit struct{ began, reset time.Time }

// holds reports whether GitHub is not to be asked yet.
func (l installationLimit) holds(now time.Time) bool { return l.reset.After(now) }

func readLimit(ctx context.Context, q querier, installation int64) (installationLimit, error) {
	var began, reset int64
	err := q.QueryRowContext(ctx, `SELECT began_at, reset_at FROM rollout_rate_limits WHERE installation_id = $1`,
		installation).Scan(&began, &reset)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return installationLimit{}, nil
	case err != nil:
		return installationLimit{}, fmt.Errorf("rate limit of installation %d: %w", installation, err)
	}
	return installationLimit{began: time.UnixMicro(began).UTC(), reset: time.UnixMicro(reset).UTC()}, nil
}

// limitMet stores the rate limit a request of r's poll or adoption met,
// until when GitHub said to wait, and says so in r's audit (sayLimited);
// nothing more is asked on a's tick. A limit met again before any request
// got through is the same episode: its beginning is kept, its reset is
// GitHub's latest.
func (x *executor) limitMet(ctx context.Context, a *asking, r Rollout, until time.Time, cause error) error {
	now := x.deps.Now()
	x.deps.Log.Warn("rollout runs not read: GitHub's rate limit; asked again after its reset", "rollout", r.ID,
		"installation", r.InstallationID, "until", until.UTC().Format(time.RFC3339), "error", cause)
	var lim installationLimit
	err := x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		var err error
		if lim, err = storeLimit(ctx, tx, r.InstallationID, now, until); err != nil {
			return err
		}
		return sayLimitedTx(ctx, tx, r, lim, now)
	})
	if err != nil {
		return err
	}
	a.limit, a.limited = lim, true
	return nil
}

// sayLimited says in r's audit, once per episode of lim, that its runs
// are not asked about until the reset: a rollout that finds the limit met
// by another one says it too, since it waits for it as well.
func (x *executor) sayLimited(ctx context.Context, r Rollout, lim installationLimit) error {
	return x.deps.DB.InTx(ctx, func(tx *sql.Tx) error { return sayLimitedTx(ctx, tx, r, lim, x.deps.Now()) })
}

func sayLimitedTx(ctx context.Context, tx *sql.Tx, r Rollout, lim installationLimit, now time.Time) error {
	return auditLimited(ctx, tx, r.ID, lim, now, fmt.Sprintf("runs of %s not read: GitHub's rate limit for installation %d "+
		"is spent until %s: they are asked about then, and their batches are left as they were meanwhile",
		r.Repository, r.InstallationID, lim.reset.UTC().Format(time.RFC3339)))
}

// storeLimit stores the installation's rate limit a request met at now,
// until when GitHub said to wait, and returns it as stored. A limit met
// again before any request got through is the same episode: its
// beginning is kept, its reset is GitHub's latest.
func storeLimit(ctx context.Context, tx *sql.Tx, installation int64, now, until time.Time) (installationLimit, error) {
	if _, err := tx.ExecContext(ctx, `INSERT INTO rollout_rate_limits (installation_id, began_at, reset_at) VALUES ($1, $2, $3)
		ON CONFLICT (installation_id) DO UPDATE SET reset_at = excluded.reset_at`,
		installation, store.Micros(now), store.Micros(until)); err != nil {
		return installationLimit{}, fmt.Errorf("store the rate limit of installation %d: %w", installation, err)
	}
	return readLimit(ctx, tx, installation)
}

// auditLimited adds msg to the audit of rollout id as rate-limited unless
// a rate-limited line was said since lim's episode began (by its polls,
// its adoption or its dispatch): one line per episode and rollout.
func auditLimited(ctx context.Context, tx *sql.Tx, id string, lim installationLimit, now time.Time, msg string) error {
	return auditLimitedNews(ctx, tx, id, lim, now, msg, nil)
}

// auditLimitedNews is auditLimited for msg that may say more than the
// episode's line said (news, when not nil, tells whether a line of the
// episode said it already): then msg is added once, when it first says
// it, though another line of the episode was said. A probe round's line
// that its reading waits past its interval is so not swallowed by the
// batch's, or by the round's own line said before the reset moved past
// the interval; and, once said, it is not said again at each poll, its
// reset and deadline changing in its text.
func auditLimitedNews(ctx context.Context, tx *sql.Tx, id string, lim installationLimit, now time.Time, msg string, news func(said string) bool) error {
	rows, err := tx.QueryContext(ctx, `SELECT message FROM rollout_audit WHERE rollout_id = $1 AND type = 'rate-limited'
		AND at >= $2`, id, store.Micros(lim.began))
	if err != nil {
		return fmt.Errorf("audit of rollout %s: %w", id, err)
	}
	defer rows.Close()
	said, told := false, false
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return fmt.Errorf("audit of rollout %s: %w", id, err)
		}
		said = true
		told = told || (news != nil && news(m))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("audit of rollout %s: %w", id, err)
	}
	if said && (news == nil || told) {
		return nil
	}
	return insertAudit(ctx, tx, id, now, "rate-limited", msg)
}

// limitLifted ends the installation's rate-limit episode once GitHub
// answered a request after its reset.
func (x *executor) limitLifted(ctx context.Context, installation int64) error {
	return liftLimit(ctx, x.deps.DB.Write, installation, x.deps.Now())
}

func liftLimit(ctx context.Context, q querier, installation int64, now time.Time) error {
	_, err := q.ExecContext(ctx, `DELETE FROM rollout_rate_limits WHERE installation_id = $1 AND reset_at <= $2`,
		installation, store.Micros(now))
	if err != nil {
		return fmt.Errorf("end the rate limit of installation %d: %w", installation, err)
	}
	return nil
}
