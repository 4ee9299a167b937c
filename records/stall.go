package records

import (
	"fmt"
	"time"
)

// DefaultStallAfter is stall_after's default (DESIGN.md, Facts).
const DefaultStallAfter = 15 * time.Minute

// CheckStall reports whether r was opened (for the release of a pull
// request: merged, see stallSince) stallAfter ago or more and has not
// received a single fact since. Fact delivery is at-most-once and a lost
// fact is silent (seed 003, decision 6), so a merged release that the
// cluster never reported on is the one failure nobody would otherwise see.
//
// Only records still waiting for their first fact can stall: once a fact
// arrived, the level-triggered resync re-sends any later state, and a
// healthy or failed release is quiet by design. A stallAfter of zero or
// less means DefaultStallAfter.
func CheckStall(r Record, now time.Time, stallAfter time.Duration) (bool, string) {
	if stallAfter <= 0 {
		stallAfter = DefaultStallAfter
	}
	if r.LastFactAt != nil || r.State.Settled() {
		return false, ""
	}
	since, what, ok := stallSince(r)
	if !ok {
		return false, "" // its pull request is not merged: it cannot run yet
	}
	waited := now.Sub(since)
	if waited < stallAfter {
		return false, ""
	}
	return true, fmt.Sprintf("release %s of %s in %s has had no fact for %s since %s at %s (stall_after %s)",
		r.ReleaseID, r.App, target(r), waited.Round(time.Second), what, stamp(since), stallAfter)
}

// Stalled builds what the stall job writes for a stalled record: the
// stall_detected audit event and the alert. The alert's key is per
// release, so a check that runs again alerts once.
func Stalled(r Record, reason string, now time.Time) (AuditEvent, Effect) {
	ev := AuditEvent{
		Type:      AuditStallDetected,
		ReleaseID: r.ReleaseID,
		At:        now,
		Message:   "stall: " + reason,
		Data:      map[string]any{"state": string(r.State), "created_at": stamp(r.CreatedAt)},
	}
	eff := Effect{
		Kind:      EffectAlert,
		Type:      AlertStall,
		Key:       "alert/" + AlertStall + "/" + r.ReleaseID,
		ReleaseID: r.ReleaseID,
		Message:   reason,
		Data:      map[string]string{"app": r.App, "environment": r.Environment, "cluster": r.Cluster},
	}
	return ev, eff
}
