package rolloutflow

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/ripcord/ripcord/internal/ghlimit"
)

// rateLimited reports whether err is GitHub's rate limit that ghclient gave
// back rather than wait out (its reset is past what one request may be held
// for), and when the request may be sent again (ghlimit.Lifts, which the
// rollback pull request job reads the same way). GitHub said "later", not
// "no": the request was not acted on.
func rateLimited(err error, now time.Time) (time.Time, bool) {
	at, _, limited := ghlimit.Lifts(err, now)
	return at, limited
}

// withdrawLimited takes back the claim of ref, whose dispatch GitHub
// refused for its rate limit, stores the installation's limit (ratewait.go:
// until the reset no dispatch, poll, adoption or check run of the
// installation's rollouts is sent) and returns the time to dispatch it
// again: the reset. Nothing was started and nothing is known against the
// batch, so it is not failed. The audit says it once per rate-limit
// episode (rate-limited, until a request gets through), with until when;
// the log on every refusal.
func (x *executor) withdrawLimited(ctx context.Context, r *Rollout, ref Ref, name string, until time.Time, cause error) (time.Time, error) {
	x.deps.Log.Warn("rollout batch not dispatched: GitHub's rate limit; dispatched again after its reset", "rollout", r.ID,
		"batch", name, "installation", r.InstallationID, "until", until.UTC().Format(time.RFC3339), "error", cause)
	now := x.deps.Now()
	err := x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		if err := unclaimBatch(ctx, tx, r.ID, ref); err != nil {
			return err
		}
		lim, err := storeLimit(ctx, tx, r.InstallationID, now, until)
		if err != nil {
			return err
		}
		return auditLimited(ctx, tx, r.ID, lim, now, notDispatched(name, r.InstallationID, lim.reset))
	})
	if err != nil {
		return time.Time{}, err
	}
	r.limitedUntil = until
	return until, nil
}

// notDispatched is the rate-limited audit line of batch name, not
// dispatched before the installation's reset.
func notDispatched(name string, installation int64, reset time.Time) string {
	return fmt.Sprintf("%s not dispatched: GitHub's rate limit for installation %d is spent until %s: it is dispatched then",
		name, installation, reset.UTC().Format(time.RFC3339))
}
