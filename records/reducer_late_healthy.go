package records

import "fmt"

// lateHealthy handles a fact that is stale (observed before what its
// workload or its record showed last) but reports its release healthy.
// Moving the record back to healthy would undo what came after, yet the
// release did reach healthy, and eligibility counts exactly that (seed 003,
// "Eligibility is computed": healthyAt set, whatever its state is now). So
// when the record has no healthy_at, the fact sets it to when it was
// observed and nothing else: state, last_fact_at and the workload's
// observation stay, and no sibling is closed (a rollback's rollback_of is
// marked rolled-back when the rollback turns healthy now). The release's
// first-healthy CDEvent (service.deployed or upgraded, stamped healthy_at)
// is sent here: it is sent once, when healthy_at is set, so a later
// Healthy would not send it. It reports whether it handled the fact; if
// not, the caller ignores it with stale.
//
// The fact is kept, so a redelivery is a duplicate (Repeat: it is no newer
// than the workload's observation) and writes nothing.
func (r *reduction) lateHealthy(stale string) bool {
	f, rec := r.f, r.in.Record
	switch {
	case rec == nil || rec.HealthyAt != nil || f.ReleaseKey() == "" || rec.ReleaseID != f.ReleaseKey():
		return false
	case f.IsTask() && taskTarget(f.Status) != StateHealthy:
		return false
	case !f.IsTask() && clusterTarget(f) != StateHealthy:
		return false
	case !f.IsTask() && rec.Cluster != "" && f.Cluster != "" && rec.Cluster != f.Cluster:
		return false // another cluster's workload: drift, not this release's health
	case !f.IsTask() && !rec.RunsImage(f.Images):
		return false // the workload ran something else: not this release healthy
	}
	next := *rec
	at := f.ObservedAt
	next.HealthyAt = &at
	next.UpdatedAt = r.in.Now
	r.res.Outcome = OutcomeApplied
	r.res.Reason = fmt.Sprintf("%s; it shows release %s healthy, which its record had not recorded: healthy_at set to %s, state stays %s",
		stale, next.ReleaseID, stamp(at), next.State)
	r.res.KeepFact = true
	r.res.Records = []Record{next}
	data := r.factData()
	data["healthy_at"] = stamp(at)
	data["state"] = string(next.State)
	data["late"] = true
	r.audit(AuditFactReceived, next.ReleaseID, "late healthy fact received: "+r.describe()+"; healthy_at recorded, state stays "+string(next.State), data)
	r.res.Effects = append(r.res.Effects, r.deployedEvent(next))
	return true
}
