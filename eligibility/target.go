package eligibility

import (
	"fmt"
	"strings"

	"github.com/ripcord/ripcord/records"
)

// SelectTarget picks what to roll current back to: the newest release
// created before current, among the newest n (n <= 0: DefaultWindow) of
// current's app, environment and cluster, that reached healthy. Opened
// records other than current take no place among the n, as in Check.
//
// It passes over a release that was itself rolled back (it was replaced
// because it was bad; asked about explicitly, its image is still eligible),
// one that a rollback newer than it names in rollback_of — current or one
// passed over — even if that rollback never got healthy (rolling a failed
// rollback back must not bring back what it was replacing), and one that
// runs the same image as current (rolling back to it would change nothing). The Answer says which release was chosen and why, or
// why none was; the returned record is the zero Record when none was.
func SelectTarget(rs []records.Record, current string, n int) (records.Record, Answer) {
	if n <= 0 {
		n = DefaultWindow
	}
	var cur *records.Record
	for i := range rs {
		if rs[i].ReleaseID == current {
			cur = &rs[i]
			break
		}
	}
	if cur == nil {
		return records.Record{}, Answer{Reason: fmt.Sprintf("current release %q is not recorded", current)}
	}
	where := fmt.Sprintf("%s in %s/%s", cur.App, cur.Environment, cur.Cluster)
	here := ran(newestFirst(rs, cur.App, cur.Environment, cur.Cluster), current)
	window := here[:min(n, len(here))]
	var passed []string
	older := false
	// replacedBy maps a release to the rollback that replaces it.
	replacedBy := map[string]string{}
	for i, r := range window {
		if !older {
			older = r.ReleaseID == current
			if older && r.RollbackOf != "" {
				replacedBy[r.RollbackOf] = r.ReleaseID
			}
			continue
		}
		by, replaced := replacedBy[r.ReleaseID]
		if r.RollbackOf != "" {
			replacedBy[r.RollbackOf] = r.ReleaseID
		}
		switch {
		case replaced && r.State != records.StateRolledBack:
			passed = append(passed, fmt.Sprintf("%s is what %s rolls back", r.ReleaseID, by))
		case r.HealthyAt == nil:
			passed = append(passed, fmt.Sprintf("%s never reached healthy (%s)", r.ReleaseID, r.State))
		case r.State == records.StateRolledBack:
			passed = append(passed, fmt.Sprintf("%s was rolled back by %s", r.ReleaseID, r.RolledBackBy))
		case sameImage(r, *cur):
			passed = append(passed, fmt.Sprintf("%s runs the same image as %s", r.ReleaseID, current))
		default:
			reason := fmt.Sprintf("%s is the newest release before %s that reached healthy (at %s, %s release of %s, now %s)",
				r.ReleaseID, current, stamp(*r.HealthyAt), ordinal(i+1), where, r.State)
			if len(passed) > 0 {
				reason += "; passed over: " + strings.Join(passed, "; ")
			}
			return r, Answer{Eligible: true, Reason: reason, Evidence: evidence(r, i+1)}
		}
	}
	reason := fmt.Sprintf("no release before %s among the newest %d of %s can be rolled back to", current, n, where)
	switch {
	case !older:
		reason = fmt.Sprintf("%s is not among the newest %d releases of %s, so no older release counts", current, n, where)
	case len(passed) > 0:
		reason += ": " + strings.Join(passed, "; ")
	}
	return records.Record{}, Answer{Reason: reason}
}

// sameImage compares by digest when both records have one, else by image.
func sameImage(a, b records.Record) bool {
	da, db := a.ResolvedDigest(), b.ResolvedDigest()
	if da != "" && db != "" {
		return da == db
	}
	return strings.TrimSpace(a.Image) == strings.TrimSpace(b.Image)
}
