package records

import (
	"fmt"
	"maps"
	"time"
)

// Withdrawn reports whether the release was called off before it ever ran:
// it left opened without a single fact, which only Withdraw does (its pull
// request was closed without merging). Such a release never ran anywhere,
// so it is neither the release running in its environment nor a rollback
// target, and a new release may take its place.
func (r Record) Withdrawn() bool { return r.State == StateAborted && r.LastFactAt == nil }

// Ran reports whether the cluster or a workflow reported on the release (a
// fact was applied to it): it is, or was, the release running there. The
// state alone does not say so: a release leaves opened without a fact when
// it is withdrawn, when its deployment failed before it changed the
// workload (FailUnrun), or when a newer release became healthy first
// (superseded); none of those ran.
func (r Record) Ran() bool { return r.LastFactAt != nil }

// ranCondition is Ran in SQL, for queries over the records table.
const ranCondition = `last_fact_at IS NOT NULL`

// Withdraw ends a release that will never run: its pull request was closed
// without merging. The state machine has no state for "never ran", so the
// record becomes aborted (the release was called off) with no fact, which
// Withdrawn tells apart from an abort the cluster reported. A fact naming
// the release later (the pull request reopened and merged) moves it on like
// any aborted release. Only an opened record can be withdrawn; ok is false
// otherwise, and nothing changes. why says what happened, data is added to
// the state_changed event.
func Withdraw(r Record, why string, data map[string]any, now time.Time) (rec Record, ev AuditEvent, ok bool) {
	if r.State != StateOpened || r.LastFactAt != nil {
		return r, AuditEvent{}, false
	}
	d := map[string]any{"from": string(r.State), "to": string(StateAborted), "withdrawn": true}
	maps.Copy(d, data)
	r.State, r.UpdatedAt = StateAborted, now
	return r, AuditEvent{Type: AuditStateChanged, ReleaseID: r.ReleaseID, At: now, Data: d,
		Message: fmt.Sprintf("%s -> %s: %s; the release will never run", StateOpened, StateAborted, why)}, true
}
