package records

import (
	"fmt"
	"time"
)

// task reduces a fact a deploy workflow posted (MANA's webhook contract).
//
// A task fact for a release with no record opens one, whatever its status:
// the workflow is authenticated by its OIDC token and names app,
// environment and release itself, so this is a report, not a guess — and a
// lost in_progress must not make the success that follows it unusable.
// The record is created in opened and moved at once to the state the
// status names (in_progress → progressing, success → healthy, failed →
// failed, cancelled → aborted), so the audit trail shows both steps.
func (r *reduction) task() {
	if r.in.Record == nil {
		r.open()
		return
	}
	if reason := r.foreignTask(*r.in.Record); reason != "" {
		r.ignore(reason)
		return
	}
	next, ok := r.join(nil)
	if !ok {
		return
	}
	r.apply(next, taskTarget(r.f.Status))
}

// foreignTask says why a task fact may not touch rec although it names its
// release: the workflow's token vouches for the fact's repository only, and
// a deploy of one app or environment says nothing about another's release.
// A record registered without a repository takes any.
func (r *reduction) foreignTask(rec Record) string {
	f := r.f
	for _, c := range []struct{ field, fact, rec string }{
		{"repository", f.Repository, rec.Repository},
		{"app", f.App, rec.App},
		{"environment", f.Environment, rec.Environment},
	} {
		if c.rec != "" && c.fact != c.rec {
			return fmt.Sprintf("task fact names %s %q, but release %s is of %s %q", c.field, c.fact, rec.ReleaseID, c.field, c.rec)
		}
	}
	return ""
}

func taskTarget(s TaskStatus) State {
	switch s {
	case TaskInProgress:
		return StateProgressing
	case TaskSuccess:
		return StateHealthy
	case TaskCancelled:
		// The release was called off, not failed: aborted, as a canary a
		// person aborts. A later fact (a re-run) moves it on like any
		// aborted release.
		return StateAborted
	default: // TaskFailed; Validate rejects anything else.
		return StateFailed
	}
}

func (r *reduction) open() {
	f := r.f
	image := f.Version
	if len(f.Images) > 0 {
		image = f.Images[0]
	}
	rec := Record{
		ReleaseID:   f.ReleaseKey(),
		App:         f.App,
		Environment: f.Environment,
		Cluster:     f.Cluster,
		Repository:  f.Repository,
		Kind:        KindPromote,
		Image:       image,
		Digest:      ParseImage(image).Digest,
		GitRevision: f.Metadata["commit"],
		State:       StateOpened,
		CreatedAt:   r.in.Now,
		UpdatedAt:   r.in.Now,
	}
	r.res.Outcome = OutcomeOpened
	r.audit(AuditReleaseOpened, rec.ReleaseID,
		fmt.Sprintf("release %s of %s opened in %s by %s", rec.ReleaseID, rec.App, target(rec), r.describe()),
		map[string]any{"image": rec.Image, "kind": string(rec.Kind)})
	r.apply(rec, taskTarget(f.Status))
}

// OpenRecord starts a record that release tooling registers (POST
// /api/v1/releases) before any fact arrives. It validates rec, puts it in
// opened and stamps it with now.
func OpenRecord(rec Record, now time.Time) (Record, AuditEvent, error) {
	if err := rec.Validate(); err != nil {
		return Record{}, AuditEvent{}, fmt.Errorf("open release %q: %w", rec.ReleaseID, err)
	}
	if rec.State != "" && rec.State != StateOpened {
		return Record{}, AuditEvent{}, fmt.Errorf("open release %q: %w", rec.ReleaseID,
			&FieldError{Field: "state", Message: fmt.Sprintf("a new release starts opened, got %q", rec.State)})
	}
	for _, f := range []struct {
		field string
		set   bool
	}{{"healthy_at", rec.HealthyAt != nil}, {"rolled_back_by", rec.RolledBackBy != ""}, {"last_fact_at", rec.LastFactAt != nil}} {
		if f.set {
			return Record{}, AuditEvent{}, fmt.Errorf("open release %q: %w", rec.ReleaseID,
				&FieldError{Field: f.field, Message: "is set by facts, not by the caller"})
		}
	}
	if rec.Digest == "" {
		rec.Digest = ParseImage(rec.Image).Digest
	}
	rec.State = StateOpened
	rec.CreatedAt = now
	rec.UpdatedAt = now
	data := map[string]any{"image": rec.Image, "kind": string(rec.Kind)}
	msg := fmt.Sprintf("release %s of %s opened in %s", rec.ReleaseID, rec.App, target(rec))
	if rec.Kind == KindRollback {
		data["rollback_of"] = rec.RollbackOf
		data["rollback_reason"] = rec.RollbackReason
		msg += fmt.Sprintf(", rolling back %s: %s", rec.RollbackOf, rec.RollbackReason)
	}
	return rec, AuditEvent{Type: AuditReleaseOpened, ReleaseID: rec.ReleaseID, At: now, Message: msg, Data: data}, nil
}

// target names a record's app/environment/cluster for messages.
func target(r Record) string {
	if r.Cluster == "" {
		return r.Environment
	}
	return r.Environment + "/" + r.Cluster
}
