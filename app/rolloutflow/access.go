package rolloutflow

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ripcord/ripcord/internal/store"
)

// GitHub's answers that say nothing against a rollout: the App lost access
// (the installation was deleted or suspended, the repository removed from
// it) or GitHub did not answer. Every path that asks GitHub on a rollout's
// behalf (dispatch, run polls, adoption, the check run) classifies them
// with these helpers, so that "losing access or a GitHub outage fails
// nothing" holds on each the same way.

// tokenRefusal says why GitHub refuses the App a token for installation, as
// audit lines put it; status is GitHub's answer (installationRefused).
func tokenRefusal(installation int64, status int) string {
	return fmt.Sprintf("GitHub refuses the App a token for installation %d (%d %s: deleted or suspended?)",
		installation, status, http.StatusText(status))
}

// noToken reports whether err is the installation's token failing, so that
// the request err is about was not sent: GitHub refused it (the
// installation was deleted or suspended), or did not answer. When refused,
// the rollout's access-lost line is written once (auditOnce): lost(why)
// says what is left undone, and until when, with why GitHub's refusal. The
// log says it on every try. An unanswered token is an outage: only the log
// says so.
func (x *executor) noToken(ctx context.Context, r Rollout, err error, lost func(why string) string) (bool, error) {
	if status, ok := installationRefused(err); ok {
		msg := lost(tokenRefusal(r.InstallationID, status))
		x.deps.Log.Warn("rollout: the App lost access to its installation", "rollout", r.ID, "installation", r.InstallationID,
			"error", err)
		return true, x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
			// No check run update: the App cannot write to the repository.
			return auditOnce(ctx, tx, r.ID, x.deps.Now(), "access-lost", msg)
		})
	}
	if tokenUnanswered(err) {
		x.deps.Log.Warn("rollout: GitHub did not answer for an installation token; asked again later", "rollout", r.ID,
			"installation", r.InstallationID, "error", err)
		return true, nil
	}
	return false, nil
}

// auditOnce adds msg to the rollout's audit as typ unless it is said
// already: as the last line of that type, or by a line of that type since
// the last line of any other. A condition met on every try (access lost)
// is so said once, though several paths meet it in turn (the
// run polls and the check run, each with its own line, would otherwise
// repeat both on every poll); it is said again when met anew after the
// rollout moved on.
func auditOnce(ctx context.Context, tx *sql.Tx, id string, at time.Time, typ, msg string) error {
	var said bool
	err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM rollout_audit a WHERE a.rollout_id = $1 AND a.type = $2
		AND a.message = $3 AND (a.n = (SELECT MAX(n) FROM rollout_audit WHERE rollout_id = $1 AND type = $2)
		OR a.n > (SELECT COALESCE(MAX(n), 0) FROM rollout_audit WHERE rollout_id = $1 AND type <> $2)))`,
		id, typ, msg).Scan(&said)
	if err != nil {
		return fmt.Errorf("audit of rollout %s: %w", id, err)
	}
	if said {
		return nil
	}
	return insertAudit(ctx, tx, id, at, typ, msg)
}

// auditUnanswered adds msg, a batch GitHub did not answer for (5xx, no
// answer on the installation's token, the default branch, or the
// repository after a dispatch 404) and that is asked for again at each
// poll, to the rollout's audit as unanswered, once per outage: unless an
// unanswered line was said since the last line that ended one (unanswered
// ends with the next line about a dispatch, or about access lost or the
// rate limit, which are episodes of their own). The error GitHub's
// silence came with may change from poll to poll (a 502, then a 503, then
// none): it does not make another line, as the log has each.
func auditUnanswered(ctx context.Context, tx *sql.Tx, id string, at time.Time, msg string) error {
	var said bool
	err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM rollout_audit WHERE rollout_id = $1 AND type = 'unanswered'
		AND n > (SELECT COALESCE(MAX(n), 0) FROM rollout_audit WHERE rollout_id = $1
			AND type IN ('dispatch', 'access-lost', 'rate-limited')))`, id).Scan(&said)
	if err != nil {
		return fmt.Errorf("audit of rollout %s: %w", id, err)
	}
	if said {
		return nil
	}
	return insertAudit(ctx, tx, id, at, "unanswered", msg)
}

// openUnanswered is the unanswered line of the outage the rollout still
// waits out, if any (auditUnanswered): audit is its trail, oldest first.
func openUnanswered(audit []AuditLine) (AuditLine, bool) {
	var open AuditLine
	var ok bool
	for _, l := range audit {
		switch l.Type {
		case "unanswered":
			if !ok {
				open, ok = l, true
			}
		case "dispatch", "access-lost", "rate-limited":
			ok = false
		}
	}
	return open, ok
}

// openUnansweredOf is openUnanswered of each of the rollouts ids that
// waits out an outage, by id: one query for them all (a page of the list),
// not one audit read each.
func openUnansweredOf(ctx context.Context, q querier, ids []string) (map[string]AuditLine, error) {
	out := map[string]AuditLine{}
	if len(ids) == 0 {
		return out, nil
	}
	in, args := inList(ids)
	// The lines after each rollout's last that ended an outage, oldest
	// first: the first is the open one (auditUnanswered writes one an
	// outage).
	rows, err := q.QueryContext(ctx, `SELECT a.rollout_id, a.at, a.message FROM rollout_audit a
		WHERE a.rollout_id IN (`+in+`) AND a.type = 'unanswered'
		AND a.n > (SELECT COALESCE(MAX(b.n), 0) FROM rollout_audit b WHERE b.rollout_id = a.rollout_id
			AND b.type IN ('dispatch', 'access-lost', 'rate-limited'))
		ORDER BY a.rollout_id, a.n`, args...)
	if err != nil {
		return nil, fmt.Errorf("audit of rollouts %s: %w", strings.Join(ids, ", "), err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var at int64
		l := AuditLine{Type: "unanswered"}
		if err := rows.Scan(&id, &at, &l.Message); err != nil {
			return nil, err
		}
		if _, ok := out[id]; !ok {
			l.At = store.Time(at)
			out[id] = l
		}
	}
	return out, rows.Err()
}

// unansweredSince is when the outage the rollout waits out began to be
// said (auditUnanswered); false when it waits out none.
func unansweredSince(ctx context.Context, q querier, id string) (time.Time, bool, error) {
	var at sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT MIN(at) FROM rollout_audit WHERE rollout_id = $1 AND type = 'unanswered'
		AND n > (SELECT COALESCE(MAX(n), 0) FROM rollout_audit WHERE rollout_id = $1
			AND type IN ('dispatch', 'access-lost', 'rate-limited'))`, id).Scan(&at)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("audit of rollout %s: %w", id, err)
	}
	return store.Time(at.Int64), at.Valid, nil
}
