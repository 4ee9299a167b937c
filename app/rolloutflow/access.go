package rolloutflow

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"time"
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
