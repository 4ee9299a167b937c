package rolloutflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/internal/ghlimit"
)

// limitWait is how long to wait on a rate limit that names no time: GitHub
// documents at least a minute.
const limitWait = time.Minute

// rateLimited reports whether err is GitHub's rate limit that ghclient gave
// back rather than wait out (its reset is past what one request may be held
// for), and when the request may be sent again. GitHub said "later", not
// "no": the request was not acted on. ghclient hands the 403 or 429 back as
// GitHub sent it (or, for a request it held back, as GitHub would have), so
// go-github's types say which: *github.RateLimitError for a spent primary
// limit, *github.AbuseRateLimitError for a secondary one; a 429, or a 403
// whose headers name a time, that go-github leaves an *ErrorResponse; and
// the same answers on the App's request for an installation token.
func rateLimited(err error, now time.Time) (time.Time, bool) {
	at, _, limited := rateLimitReset(err, now)
	return at, limited
}

// rateLimitReset is rateLimited, also saying whether GitHub named the
// time (a reset, a Retry-After still ahead) rather than ripcord assuming
// limitWait: only a named time is worth passing on to a caller as when to
// come back.
func rateLimitReset(err error, now time.Time) (at time.Time, named, limited bool) {
	var rl *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	var er *github.ErrorResponse
	var he *ghinstallation.HTTPError
	var resp *http.Response
	switch {
	case errors.As(err, &rl):
		return later(rl.Rate.Reset.Time, now), rl.Rate.Reset.Time.After(now), true
	case errors.As(err, &abuse):
		if abuse.Response != nil {
			if at, ok := ghlimit.RetryAt(abuse.Response.Header, now); ok {
				return later(at, now), at.After(now), true
			}
		}
		if abuse.RetryAfter != nil {
			at := now.Add(*abuse.RetryAfter)
			return later(at, now), at.After(now), true
		}
		return now.Add(limitWait), false, true
	case errors.As(err, &er):
		resp = er.Response
	case errors.As(err, &he):
		resp = he.Response
	}
	if resp == nil || (resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests) {
		return time.Time{}, false, false
	}
	if at, ok := ghlimit.RetryAt(resp.Header, now); ok {
		return later(at, now), at.After(now), true
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		return now.Add(limitWait), false, true
	}
	return time.Time{}, false, false // a 403 that is no rate limit: a refusal
}

// later is at, or, when that is not after now (GitHub's clock is behind,
// or go-github's memory of a limit outlived it), limitWait from now.
func later(at, now time.Time) time.Time {
	if !at.After(now) {
		return now.Add(limitWait)
	}
	return at
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
