package rollbackflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/commands"
	"github.com/ripcord/ripcord/internal/ghlimit"
)

// maxLimitWait bounds how long a rollback pull request waits for GitHub's
// rate limit: a reset is at most an hour away, and a time further out (a
// clock far off, a header misread) must not park a rollback for longer.
const maxLimitWait = time.Hour

// limitedUntil reports whether err is GitHub's rate limit, which the
// client (app/ghclient) gave back rather than wait out, and when the
// request may be sent again. GitHub said "later", not "no": nothing was
// done, so the job waits for that time instead of River's backoff, which
// would spend attempts against a limit that has not lifted. go-github
// reports a spent primary limit as *github.RateLimitError and a secondary
// one as *github.AbuseRateLimitError; a 429, or a 403 whose headers name a
// time, stays an *github.ErrorResponse; the installation token's request
// fails with ghinstallation's *HTTPError.
func limitedUntil(err error, now time.Time) (time.Time, bool) {
	var rl *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	var er *github.ErrorResponse
	var he *ghinstallation.HTTPError
	var resp *http.Response
	switch {
	case errors.As(err, &rl):
		if rl.Response != nil {
			if at, ok := ghlimit.RetryAt(rl.Response.Header, now); ok {
				return at, true
			}
		}
		return rl.Rate.Reset.Add(ghlimit.ResetMargin), true
	case errors.As(err, &abuse):
		if abuse.Response != nil {
			if at, ok := ghlimit.RetryAt(abuse.Response.Header, now); ok {
				return at, true
			}
		}
		if abuse.RetryAfter != nil {
			return now.Add(*abuse.RetryAfter), true
		}
		return now.Add(ghlimit.SecondaryLimitWait), true
	case errors.As(err, &er):
		resp = er.Response
		if resp != nil && resp.StatusCode == http.StatusForbidden && ghlimit.NamesSecondaryLimit([]byte(er.Message)) {
			if at, ok := ghlimit.RetryAt(resp.Header, now); ok {
				return at, true
			}
			return now.Add(ghlimit.SecondaryLimitWait), true
		}
	case errors.As(err, &he):
		resp = he.Response
	}
	if resp == nil || (resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests) {
		return time.Time{}, false
	}
	if at, ok := ghlimit.RetryAt(resp.Header, now); ok {
		return at, true
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		return now.Add(ghlimit.SecondaryLimitWait), true
	}
	return time.Time{}, false // a 403 that is no rate limit: a refusal
}

// limitWait is how long to snooze until at: never past maxLimitWait, and
// at least a second, so a reset that GitHub's clock puts in the past is
// not retried in a tight loop.
func limitWait(at, now time.Time) time.Duration {
	return min(max(at.Sub(now), time.Second), maxLimitWait)
}

// snoozeForLimit has the job wait for GitHub's rate limit to lift, not
// counted as an attempt (River's snooze does not count one), and tells who
// asked when it tries again, once for each time it names.
func (w *pullRequestWorker) snoozeForLimit(ctx context.Context, a PullRequestArgs, until time.Time, cause error) error {
	d := w.deps
	now := d.Now()
	wait := limitWait(until, now)
	again := now.Add(wait).UTC().Truncate(time.Second)
	d.Log.Warn("rollback pull request not opened yet: GitHub's rate limit; tried again after it lifts",
		"release_id", a.ReleaseID, "until", until.UTC().Format(time.RFC3339), "again", again.Format(time.RFC3339), "error", cause)
	if a.Reply != nil {
		body := fmt.Sprintf("GitHub's rate limit for ripcord is spent, so the rollback pull request is not opened yet: "+
			"ripcord tries again at %s (in %s).", again.Format("2006-01-02 15:04:05 UTC"), wait.Round(time.Second))
		err := d.DB.InTx(ctx, func(tx *sql.Tx) error { return answerLater(ctx, tx, d.River(), a.Reply, again, body) })
		if err != nil {
			// The job waits all the same: the limit has not lifted either way.
			d.Log.Error("rollback pull request: the rate-limit notice was not queued", "release_id", a.ReleaseID, "error", err)
		}
	}
	return river.JobSnooze(wait)
}

// answerLater tells who asked, in tx, that the rollback waits until again:
// a comment of its own (the final answer comes after it), or the note of
// the check run whose button was clicked, which the final answer replaces.
func answerLater(ctx context.Context, tx *sql.Tx, rc *river.Client[*sql.Tx], r *ReplyTo, again time.Time, body string) error {
	if r.Check != "" {
		return answer(ctx, tx, rc, r, body)
	}
	return commands.QueueReply(ctx, tx, rc, commands.ReplyArgs{Repository: r.Repository, Number: r.Number,
		InstallationID: r.InstallationID, Key: r.Key + "-rate-limited-" + strconv.FormatInt(again.Unix(), 10),
		Body: "@" + r.User + " " + body, After: r.Key})
}
