package records

import (
	"fmt"
	"maps"
	"strings"
)

// apply tracks an accepted fact on rec and moves rec to target when that
// differs from its state. Staying in the same state (a second Healthy, the
// next canary step) still counts: last_fact_at moves and the fact is kept.
func (r *reduction) apply(rec Record, target State) {
	if r.res.Outcome == "" {
		r.res.Outcome = OutcomeApplied
	}
	at := r.f.ObservedAt
	rec.LastFactAt = &at
	rec.UpdatedAt = r.in.Now
	data := r.factData()
	r.audit(AuditFactReceived, rec.ReleaseID, "fact received: "+r.describe(), data)
	if r.res.ReleaseEvent || r.f.IsTask() {
		r.audit(AuditDeploymentReceived, rec.ReleaseID, "deployment received: "+r.describe(), data)
	}
	var closed []Record
	if target != rec.State {
		if err := Transition(rec.State, target); err != nil {
			r.ignore(fmt.Sprintf("release %s: %v", rec.ReleaseID, err))
			return
		}
		switch {
		case r.cancelled():
			// A cancelled deploy is no failure: no failure_detected, and
			// the state_changed event says who or what stopped it.
			why, data := r.cancelledBy()
			r.setState(&rec, target, why, data)
		default:
			r.setState(&rec, target, r.describe(), nil)
		}
		switch {
		case target == StateHealthy:
			closed = r.becameHealthy(&rec)
		case r.cancelled():
		case target == StateDegraded, target == StateAborted, target == StateFailed:
			d := map[string]any{"state": string(target)}
			if r.f.FailureType != "" {
				d["failure_type"] = r.f.FailureType
			}
			r.audit(AuditFailureDetected, rec.ReleaseID, fmt.Sprintf("release %s is %s: %s", rec.ReleaseID, target, r.describe()), d)
		}
	}
	r.res.KeepFact = true
	r.res.Records = append([]Record{rec}, closed...)
}

// cancelled reports whether the fact is a task fact saying the deploy job
// was cancelled.
func (r *reduction) cancelled() bool { return r.f.IsTask() && r.f.Status == TaskCancelled }

// cancelledBy says which run stopped the release, and who started it, for
// the state_changed event of a cancelled task fact: GitHub does not tell
// the job who cancelled it, so the run, its attempt and its actor are what
// there is to go on.
func (r *reduction) cancelledBy() (string, map[string]any) {
	f := r.f
	data := map[string]any{"cancelled": true, "repository": f.Repository,
		"workflow_run_id": f.WorkflowRunID, "run_attempt": f.RunAttempt}
	run := fmt.Sprintf("run %d attempt %d of %s", f.WorkflowRunID, f.RunAttempt, f.Repository)
	var about []string
	for _, k := range []string{"workflow", "job", "actor"} {
		if v := f.Metadata[k]; v != "" {
			data[k] = v
			about = append(about, k+" "+v)
		}
	}
	if len(about) > 0 {
		run += " (" + strings.Join(about, ", ") + ")"
	}
	return fmt.Sprintf("the deploy job of %s/%s in %s was cancelled; a cancelled deploy is no failed one, so recovery neither retries nor rolls it back",
		f.App, f.Environment, run), data
}

// setState moves rec and writes the state_changed event every transition
// owes the audit trail.
func (r *reduction) setState(rec *Record, to State, why string, extra map[string]any) {
	from := rec.State
	rec.State = to
	rec.UpdatedAt = r.in.Now
	data := map[string]any{"from": string(from), "to": string(to)}
	maps.Copy(data, extra)
	r.audit(AuditStateChanged, rec.ReleaseID, fmt.Sprintf("%s -> %s: %s", from, to, why), data)
}

// becameHealthy runs when rec enters healthy. It sets healthy_at the first
// time, closes the older releases rec replaces, and — only the first time,
// so a restart or resync never repeats them — sends the CDEvents. It
// returns the siblings it changed. service.rolledback goes with marking
// rollback_of rolled-back, which happens once (rolled-back is final): a
// rollback whose healthy_at a late fact recorded (lateHealthy) while it
// was degraded marks its target only when it turns healthy now.
func (r *reduction) becameHealthy(rec *Record) []Record {
	first := rec.HealthyAt == nil
	if first {
		at := r.f.ObservedAt
		rec.HealthyAt = &at
	}
	// Read before closing anything: a sibling superseded just now still
	// counts as having been healthy before.
	deployed := r.deployedEvent(*rec)
	closed, targetClosed := r.closeSiblings(*rec)
	if first {
		r.res.Effects = append(r.res.Effects, deployed)
	}
	if rec.Kind == KindRollback && (first || targetClosed) {
		msg := fmt.Sprintf("rollback %s is healthy; %s is rolled-back", rec.ReleaseID, rec.RollbackOf)
		if !targetClosed {
			msg = fmt.Sprintf("rollback %s is healthy; %s was not open here, so nothing was marked rolled-back", rec.ReleaseID, rec.RollbackOf)
		}
		r.audit(AuditRollbackCompleted, rec.ReleaseID, msg, map[string]any{"rollback_of": rec.RollbackOf})
		// service.rolledback claims that rollback_of was rolled back: a
		// release ripcord does not know (older than ripcord, or past
		// retention) or one already closed was not, by this rollback.
		if targetClosed {
			r.res.Effects = append(r.res.Effects, cdevent(CDEventServiceRolledBack, *rec))
		}
	}
	return closed
}

// deployedEvent is the CDEvent rec's first healthy sends: service.upgraded
// when a release of its target was healthy before, else service.deployed.
func (r *reduction) deployedEvent(rec Record) Effect {
	everHealthy := r.in.EverHealthy
	for _, s := range r.in.Siblings {
		if s.ReleaseID != rec.ReleaseID && s.SameTarget(rec) && s.HealthyAt != nil {
			everHealthy = true
		}
	}
	if everHealthy {
		return cdevent(CDEventServiceUpgraded, rec)
	}
	return cdevent(CDEventServiceDeployed, rec)
}

// closeSiblings marks the releases rec replaces: the one a rollback names
// becomes rolled-back, every other open sibling created before rec becomes
// superseded. Newer siblings are left alone — rec reaching healthy late
// says nothing about a release that came after it. The bool reports
// whether the rollback's target was found open and marked.
func (r *reduction) closeSiblings(rec Record) ([]Record, bool) {
	var closed []Record
	targetClosed := false
	for _, s := range r.in.Siblings {
		if s.ReleaseID == rec.ReleaseID || !s.SameTarget(rec) || !s.Open() {
			continue
		}
		switch {
		case rec.Kind == KindRollback && s.ReleaseID == rec.RollbackOf:
			if Transition(s.State, StateRolledBack) != nil {
				continue
			}
			s.RolledBackBy = rec.ReleaseID
			r.setState(&s, StateRolledBack, "rollback "+rec.ReleaseID+" is healthy",
				map[string]any{"rolled_back_by": rec.ReleaseID})
			targetClosed = true
		case s.CreatedAt.Before(rec.CreatedAt):
			if Transition(s.State, StateSuperseded) != nil {
				continue
			}
			r.setState(&s, StateSuperseded, "newer release "+rec.ReleaseID+" is healthy",
				map[string]any{"superseded_by": rec.ReleaseID})
		default:
			continue
		}
		closed = append(closed, s)
	}
	return closed, targetClosed
}
