package recoveryflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/recovery"
)

// jobAttempts bounds the retries of one recovery job on errors (GitHub down).
const jobAttempts = 10

// decisionEvents are the audit events of an episode's decision, in the
// decision's order. withFailure is false when a scheduled retry is decided
// again: its failure was recorded when it happened.
func decisionEvents(ep Episode, deliveryID string, withFailure bool) []records.AuditEvent {
	d, c := ep.Decision, ep.Context
	var out []records.AuditEvent
	for _, typ := range d.AuditEvents {
		msg := d.Reason
		if typ == recovery.EventFailureDetected {
			if !withFailure {
				continue
			}
			msg = fmt.Sprintf("Run %d (attempt %d) of %s failed with conclusion %s; failure type %s (from %s); failure %d of %s in %s.",
				ep.RunID, ep.RunAttempt, ep.Workflow, c.Conclusion, c.Input.FailureType, c.FailureTypeSource, ep.RetryCount,
				ep.App, where(ep.Environment, ep.Cluster))
		}
		e := auditEvent(ep, records.AuditType(typ), deliveryID, ep.UpdatedAt, msg)
		e.Data["action"], e.Data["rule"] = string(d.Action), d.Rule
		e.Data["failure_type"], e.Data["retry_count"] = c.Input.FailureType, ep.RetryCount
		if d.Action == recovery.ActionRetry {
			e.Data["retry_at"], e.Data["backoff"] = d.RetryAt.UTC().Format(time.RFC3339Nano), d.Backoff.String()
		}
		if d.Target != nil {
			e.Data["target_release_id"], e.Data["target_version"] = d.Target.ReleaseID, d.Target.Version
		}
		if (typ == recovery.EventRollbackInitiated || typ == recovery.EventRollbackSkipped) && c.Input.Live.Known {
			// Seed 000: the rollback's events record the version that was
			// actually running, the ground the rollback or skip stood on.
			e.Data["live_release_id"], e.Data["live_version"] = c.LiveReleaseID, c.Input.Live.Version
		}
		out = append(out, e)
	}
	return out
}

// auditEvent is an event of the episode, filed under its alert key so that
// filtering by the release (or the run, when the release is unknown) tells
// the whole story.
func auditEvent(ep Episode, typ records.AuditType, deliveryID string, at time.Time, msg string) records.AuditEvent {
	return records.AuditEvent{Type: typ, ReleaseID: ep.AlertKey(), DeliveryID: deliveryID, At: at, Message: msg,
		Data: map[string]any{"repository": ep.Repository, "run_id": ep.RunID, "run_attempt": ep.RunAttempt,
			"app": ep.App, "environment": ep.Environment}}
}

// effects stores an episode's decision's audit events and queues its
// effects, in the transaction that saved the episode; asked is f.ask's
// answer for ep, asked before that transaction.
func (f *flow) effects(ctx context.Context, tx *sql.Tx, ep Episode, events []records.AuditEvent, asked any) error {
	if err := f.deps.Records.InsertAudit(ctx, tx, events...); err != nil {
		return err
	}
	d := ep.Decision
	f.metrics.decisions.WithLabelValues(string(d.Action), d.Rule).Inc()
	if err := f.queueCheck(ctx, tx, ep); err != nil {
		return err
	}
	key := RerunArgs{Repository: ep.Repository, RunID: ep.RunID, Attempt: ep.RunAttempt, InstallationID: ep.InstallationID}
	switch d.Action {
	case recovery.ActionRetry:
		opts := river.InsertOpts{}
		// A time in the past (a 1ms backoff) makes the job available at
		// once; a scheduled one waits for River's scheduler.
		if d.RetryAt.After(f.deps.Now()) {
			opts.ScheduledAt = d.RetryAt
		}
		return f.insert(ctx, tx, key, opts)
	case recovery.ActionRollback:
		return f.rollback(ctx, tx, ep, asked)
	case recovery.ActionAlert:
		f.deps.Log.Warn("manual intervention required", "repository", ep.Repository, "run_id", ep.RunID, "rule", d.Rule, "reason", d.Reason)
		return f.insert(ctx, tx, AlertArgs{Repository: key.Repository, RunID: key.RunID, Attempt: key.Attempt,
			InstallationID: key.InstallationID}, river.InsertOpts{})
	}
	return nil
}

// rollbackRequest is ep's rollback decision for the environment's
// executor; ok is false when ep does not roll back with one.
func (f *flow) rollbackRequest(ep Episode) (RollbackExecutor, RollbackRequest, bool) {
	ex, ok := f.executors[ep.Context.Config.RollbackMode]
	t := ep.Decision.Target
	if ep.Decision.Action != recovery.ActionRollback || !ok || t == nil {
		return nil, RollbackRequest{}, false
	}
	return ex, RollbackRequest{
		Key:     fmt.Sprintf("%s/%d", RunKey(ep.Repository, ep.RunID), ep.RunAttempt),
		Episode: ep, Target: Target{ReleaseID: t.ReleaseID, Version: t.Version, Digest: t.Digest},
		Reason: ep.Decision.Reason, InstallationID: ep.InstallationID,
	}, true
}

// ask asks, before the transaction that stores ep's decision, what the
// executor of ep's rollback needs to know (RollbackAsker); nil otherwise.
func (f *flow) ask(ctx context.Context, ep Episode) (any, error) {
	ex, req, ok := f.rollbackRequest(ep)
	if !ok {
		return nil, nil
	}
	asker, ok := ex.(RollbackAsker)
	if !ok {
		return nil, nil
	}
	return asker.Ask(ctx, req)
}

// rollback hands a rollback decision to the environment's executor.
func (f *flow) rollback(ctx context.Context, tx *sql.Tx, ep Episode, asked any) error {
	ex, req, ok := f.rollbackRequest(ep)
	if !ok {
		// Decide only rolls back with an available mode and a target.
		return fmt.Errorf("episode %s#%d: rollback with mode %q has no executor or target", ep.Repository, ep.RunID, ep.Context.Config.RollbackMode)
	}
	req.Asked = asked
	id, err := ex.Queue(ctx, tx, req)
	var notStarted *NotStarted
	if errors.As(err, &notStarted) {
		return f.rollbackFailed(ctx, tx, ep, notStarted.Reason, "")
	}
	if err != nil {
		return err
	}
	// ep was saved just now, in tx: its record of the release is saved over it.
	next, ok := ep.RollbackOpened(ep.RunAttempt, id, f.deps.Now())
	if !ok {
		return nil
	}
	if err := saveEpisode(ctx, tx, next, ep.Seq); err != nil {
		return err
	}
	return f.queueCheck(ctx, tx, next)
}

// queueCheck queues the rendering of the episode's check run as of ep.Seq.
func (f *flow) queueCheck(ctx context.Context, tx *sql.Tx, ep Episode) error {
	return f.insert(ctx, tx, CheckArgs{Repository: ep.Repository, RunID: ep.RunID, Seq: ep.Seq, InstallationID: ep.InstallationID},
		river.InsertOpts{})
}
