package rolloutflow

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
)

// A probe round whose dispatch sent no probe for a reason that says
// nothing about the release's health is no reading, red or green, however
// long it lasts. GitHub's rate limit is the installation's (ratewait.go):
// the round waits for the stored limit's reset, is not sent into it, and
// the audit says it as a rate limit once per episode. Access lost (the
// repository removed from the installation, the installation deleted or
// suspended) is handled as for a batch (dispatch.go): nothing could be
// deployed or rolled back meanwhile either, so the gate does not fail; the
// round is asked for again at each poll and the audit says it once.

// since is when the reading of a round to be dispatched now began to be
// asked for: a round retried after a 5xx keeps its first try's time.
func since(p probeRound, reading string, now time.Time) time.Time {
	if p.Reading == reading && p.State == roundRetry {
		return p.DispatchedAt
	}
	return now
}

// probeUnsent tells, from GitHub's answer err to a round's dispatch (sent:
// the dispatch itself went out), the answers that sent no probe and say
// nothing about health: GitHub's rate limit (limited, until when) and
// access lost (why, as the audit puts it). A 404 on the dispatch is a
// workflow GitHub does not know, or a repository the App can no longer
// read: the repository's own answer tells them apart, and one GitHub does
// not give (5xx, none) is rerr, an outage.
func (x *executor) probeUnsent(ctx context.Context, gh *github.Client, r *Rollout, workflow string, sent bool, err error) (why string, until time.Time, limited bool, rerr error) {
	now := x.deps.Now()
	if until, ok := rateLimited(err, now); ok {
		return "", until, true, nil
	}
	if status, ok := installationRefused(err); ok {
		return tokenRefusal(r.InstallationID, status), time.Time{}, false, nil
	}
	if err == nil || !notFound(err) {
		return "", time.Time{}, false, nil
	}
	if !sent {
		// The 404 was on the repository itself, read for its default
		// branch.
		return fmt.Sprintf("GitHub answers 404 on %s, which the App can no longer read (removed from the installation?)",
			r.Repository), time.Time{}, false, nil
	}
	owner, repo, _ := strings.Cut(r.Repository, "/")
	lost, rerr := x.accessLost(ctx, gh, owner, repo)
	if until, ok := rateLimited(rerr, now); ok {
		return "", until, true, rerr
	}
	if lost {
		return fmt.Sprintf("GitHub answers 404 on the dispatch of %s and on %s, which the App can no longer read "+
			"(removed from the installation?)", workflow, r.Repository), time.Time{}, false, nil
	}
	return "", time.Time{}, false, rerr
}

// probeLimitMet stores the installation's rate limit a round's dispatch
// met, until when GitHub said to wait, and leaves the round to wait for it.
func (x *executor) probeLimitMet(ctx context.Context, r *Rollout, reading string, until, deadline time.Time, cause error) error {
	x.deps.Log.Warn("rollout probes not dispatched: GitHub's rate limit; dispatched after its reset", "rollout", r.ID,
		"reading", reading, "installation", r.InstallationID, "until", until.UTC().Format(time.RFC3339), "error", cause)
	var lim installationLimit
	err := x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		var err error
		if lim, err = storeLimit(ctx, tx, r.InstallationID, x.deps.Now(), until); err != nil {
			return err
		}
		return x.roundLimited(ctx, tx, r, reading, lim, deadline)
	})
	if err == nil {
		r.limitedUntil = lim.reset
	}
	return err
}

// roundLimited leaves the round of reading, claimed, undispatched until
// lim's reset, and says so in the audit once per episode: as a rate limit,
// and, when the reset is past deadline (the end of the reading's
// interval), that the reading waits for it rather than go red, once for
// the reading when that first applies, though the episode was said
// (auditLimitedNews).
func (x *executor) roundLimited(ctx context.Context, tx *sql.Tx, r *Rollout, reading string, lim installationLimit, deadline time.Time) error {
	now := x.deps.Now()
	round := fmt.Sprintf("probe workflow of reading %s not dispatched: ", reading)
	msg := round + fmt.Sprintf("GitHub's rate limit for installation %d is spent until %s",
		r.InstallationID, lim.reset.UTC().Format(time.RFC3339))
	var news func(string) bool
	if lim.reset.After(deadline) {
		msg += fmt.Sprintf(pastInterval+" (%s): the reading waits for the reset, not red for it, "+
			"and its probes are dispatched then", deadline.UTC().Format(time.RFC3339))
		news = func(said string) bool { return strings.HasPrefix(said, round) && strings.Contains(said, pastInterval) }
	} else {
		msg += ": it is dispatched then"
	}
	if err := setProbeDispatched(ctx, tx, r.ID, reading, 0, roundLimited, msg, now); err != nil {
		return err
	}
	return auditLimitedNews(ctx, tx, r.ID, lim, now, msg, news)
}

// pastInterval is how a round's rate-limited line says that the reset is
// past the end of its reading's interval.
const pastInterval = ", past the end of the reading's interval"

// roundLost leaves the round of reading, claimed, undispatched until the
// next poll, the App having lost access (why), and says so in the audit
// once; the log says it on every try.
func (x *executor) roundLost(ctx context.Context, r *Rollout, reading, why string, cause error) error {
	msg := fmt.Sprintf("probe workflow of reading %s not dispatched: %s: the reading waits, not red for it, "+
		"and the probe workflow is asked for again at each poll until access is back", reading, why)
	x.deps.Log.Warn("rollout probes not dispatched: the App lost access", "rollout", r.ID, "reading", reading,
		"repository", r.Repository, "installation", r.InstallationID, "error", cause)
	return x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		if err := setProbeDispatched(ctx, tx, r.ID, reading, 0, roundLost, msg, x.deps.Now()); err != nil {
			return err
		}
		// No check run update: the App cannot write to the repository.
		return auditOnce(ctx, tx, r.ID, x.deps.Now(), "access-lost", msg)
	})
}
