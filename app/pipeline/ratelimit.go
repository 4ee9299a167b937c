package pipeline

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/internal/ghlimit"
)

// LimitSnooze has a job whose request GitHub refused for its rate limit,
// which the client (app/ghclient) gave back rather than wait out, or whose
// write the client's pacing held past the job's deadline (ghlimit.Lifts
// reads both), wait until the limit lifts (at most ghlimit.MaxSnooze at a
// time): River's backoff would spend the job's attempts against a limit
// that has not lifted, and its last one would give up (drop a comment,
// fail a gate closed, leave a deployment behind) though GitHub never said
// no. GitHub did nothing, so the snooze counts as no attempt.
//
// It is nil when err is no such limit, or the job's own context has ended:
// the error is then the job's, to retry or give up on as it does for any
// other, so a job returns the snooze before its give-up logic looks at err.
func LimitSnooze(ctx context.Context, d Deps, kind string, err error) error {
	now := d.Now()
	at, _, limited := ghlimit.Lifts(err, now)
	if !limited || ctx.Err() != nil {
		return nil
	}
	wait := ghlimit.Snooze(at, now)
	d.Log.Warn("GitHub's rate limit: the job waits for it to lift", "kind", kind,
		"until", at.UTC().Format(time.RFC3339), "wait", wait, "error", err)
	return river.JobSnooze(wait)
}
