package rollbackflow

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/commands"
	"github.com/ripcord/ripcord/internal/ghlimit"
	"github.com/ripcord/ripcord/records"
)

// limitedUntil reports whether err is GitHub's rate limit, which the
// client (app/ghclient) gave back rather than wait out, and when the
// request may be sent again (ghlimit.Lifts, which rollouts read the same
// way). GitHub said "later", not "no": nothing was done, so the job waits
// for that time instead of River's backoff, which would spend attempts
// against a limit that has not lifted.
func limitedUntil(err error, now time.Time) (time.Time, bool) {
	at, _, limited := ghlimit.Lifts(err, now)
	return at, limited
}

// snoozeForLimit has the job wait for GitHub's rate limit to lift, not
// counted as an attempt (River's snooze does not count one), and tells who
// asked when it tries again, once for each time it names.
func (w *pullRequestWorker) snoozeForLimit(ctx context.Context, a PullRequestArgs, until time.Time, cause error) error {
	d := w.deps
	now := d.Now()
	lw, err := w.limitWaits(ctx, a)
	wait := lw.Snooze(until, now)
	again := now.Add(wait).UTC().Truncate(time.Second)
	d.Log.Warn("rollback pull request not opened yet: GitHub's rate limit; tried again after it lifts",
		"release_id", a.ReleaseID, "until", until.UTC().Format(time.RFC3339), "again", again.Format(time.RFC3339), "error", cause)
	if err == nil {
		err = w.auditLimited(ctx, a, lw, until, again)
	}
	if err != nil {
		// The job waits all the same; the log above says it.
		d.Log.Error("rollback pull request: the rate-limit audit event was not written", "release_id", a.ReleaseID, "error", err)
	}
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

// maxLimitEvents bounds the rollback_rate_limited events read for one
// release: one per wait, a wait an hour at most.
const maxLimitEvents = 1000

// limitWaits is what the audit trail says of one rollback's waits for
// GitHub's rate limit: since when it waits and whether it alerted (the
// alert is due ghlimit.AlertAfter after the first wait, and the job keeps
// waiting after it), and until when the newest wait was, as written.
type limitWaits struct {
	ghlimit.Wait
	until string
}

func (w *pullRequestWorker) limitWaits(ctx context.Context, a PullRequestArgs) (limitWaits, error) {
	said, err := w.deps.Records.Audit(ctx, records.AuditFilter{ReleaseID: a.Plan.Record.RollbackOf,
		Type: records.AuditRollbackRateLimited, Oldest: true, Limit: maxLimitEvents})
	if err != nil {
		return limitWaits{}, err
	}
	var lw limitWaits
	for _, e := range said {
		if e.Data["rollback_release_id"] != a.ReleaseID {
			continue
		}
		if lw.Since.IsZero() {
			lw.Since = e.At
		}
		lw.until, _ = e.Data["until"].(string)
		lw.Alerted = lw.Alerted || e.Data["alert"] == true
	}
	return lw, nil
}

// auditLimited writes, on the release rolled back, that the rollback waits
// for GitHub's rate limit until until: a rollback started by recovery or
// the API has nobody to tell but its release's story. Once per wait: a try
// of the job that meets the limit with the same time (a snooze ends at
// most an hour on, before a reset further out; the client holds back the
// installation's requests until its reset) adds nothing. Once the rollback
// has waited ghlimit.AlertAfter since its first wait, it alerts (once). lw is what
// the audit trail said before this try.
func (w *pullRequestWorker) auditLimited(ctx context.Context, a PullRequestArgs, lw limitWaits, until, again time.Time) error {
	d := w.deps
	stamp := until.UTC().Truncate(time.Second).Format(time.RFC3339)
	now := d.Now()
	var events []records.AuditEvent
	if lw.until != stamp {
		events = append(events, records.AuditEvent{Type: records.AuditRollbackRateLimited,
			ReleaseID: a.Plan.Record.RollbackOf, At: now,
			Message: fmt.Sprintf("rollback %s: the rollback pull request waits for GitHub's rate limit, spent until %s; tried again at %s",
				a.ReleaseID, stamp, again.UTC().Format(time.RFC3339)),
			Data: map[string]any{"rollback_release_id": a.ReleaseID, "until": stamp}})
	}
	var alert *records.Effect
	if lw.AlertDue(now) {
		ev, eff := limitAlert(a, lw.Since, now, stamp, again)
		events, alert = append(events, ev), &eff
	}
	if len(events) == 0 {
		return nil
	}
	err := d.DB.InTx(ctx, func(tx *sql.Tx) error { return d.Records.InsertAudit(ctx, tx, events...) })
	if err == nil && alert != nil && d.RaiseAlert != nil {
		d.RaiseAlert(*alert)
	}
	return err
}

// limitAlert is the alert of a rollback that has waited for GitHub's rate
// limit since first: a rollback_rate_limited event marked alert, on the
// release rolled back, and the alert raised as the stall alert is.
func limitAlert(a PullRequestArgs, first, now time.Time, until string, again time.Time) (records.AuditEvent, records.Effect) {
	since := first.UTC().Truncate(time.Second).Format(time.RFC3339)
	msg := fmt.Sprintf("release %s is still not rolled back: the pull request of its rollback %s has waited for GitHub's rate limit "+
		"for %s, since %s; GitHub says the limit lasts until %s; ripcord keeps waiting and tries again at %s",
		a.Plan.Record.RollbackOf, a.ReleaseID, now.Sub(first).Round(time.Second), since, until, again.UTC().Format(time.RFC3339))
	ev := records.AuditEvent{Type: records.AuditRollbackRateLimited, ReleaseID: a.Plan.Record.RollbackOf, At: now,
		Message: "alert: " + msg,
		Data:    map[string]any{"rollback_release_id": a.ReleaseID, "until": until, "since": since, "alert": true}}
	eff := records.Effect{Kind: records.EffectAlert, Type: records.AlertRollbackRateLimited,
		Key: "alert/" + records.AlertRollbackRateLimited + "/" + a.ReleaseID, ReleaseID: a.Plan.Record.RollbackOf, Message: msg,
		Data: map[string]string{"rollback_release_id": a.ReleaseID, "since": since, "until": until,
			"app": a.Plan.Record.App, "environment": a.Plan.Record.Environment, "cluster": a.Plan.Record.Cluster}}
	return ev, eff
}
