package records

import (
	"fmt"
	"maps"
	"time"
)

// FailUnrun ends a release whose deployment failed before it changed the
// workload: a rollback the cluster's agent skipped, alerted on or failed
// before its patch, or that no agent took or finished in time. No fact
// will come for it, so left opened it would raise a stall alert saying
// "stalled" instead of why. Seed 003 ends a release whose deployment
// failed before the workload changed (a failed sync) in failed; this is
// that end, reached without a fact, so last_fact_at stays unset. A fact
// naming the release later (the agent did roll back after all) moves it
// on like any failed release. Only an opened record can be failed so; ok
// is false otherwise, and nothing changes. why says what failed; data is
// added to both audit events.
func FailUnrun(r Record, why string, data map[string]any, now time.Time) (rec Record, evs []AuditEvent, ok bool) {
	if r.State != StateOpened || r.LastFactAt != nil {
		return r, nil, false
	}
	changed := map[string]any{"from": string(r.State), "to": string(StateFailed)}
	maps.Copy(changed, data)
	failed := map[string]any{"state": string(StateFailed)}
	maps.Copy(failed, data)
	r.State, r.UpdatedAt = StateFailed, now
	return r, []AuditEvent{
		{Type: AuditStateChanged, ReleaseID: r.ReleaseID, At: now, Data: changed,
			Message: fmt.Sprintf("%s -> %s: %s; the release never ran", StateOpened, StateFailed, why)},
		{Type: AuditFailureDetected, ReleaseID: r.ReleaseID, At: now, Data: failed,
			Message: fmt.Sprintf("release %s is %s: %s", r.ReleaseID, StateFailed, why)},
	}, true
}
