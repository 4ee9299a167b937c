package records

import (
	"fmt"
	"slices"
	"strings"
)

// cluster reduces a fact from a cluster source (rollout, deployment,
// argocd).
func (r *reduction) cluster() {
	f, prev := r.f, r.in.Previous
	r.unchanged = unchangedReport(prev, f)
	if f.Phase == PhaseDeleted {
		r.deleted()
		return
	}
	// Without this the source reports the new release id with the old
	// pods' phase: Healthy before the controller even saw the update
	// (seed 003, Phase 0 findings).
	if f.ObservedGeneration != f.Generation {
		r.ignore(fmt.Sprintf("observed_generation %d != generation %d: the controller has not acted on this spec yet, so the phase describes the previous one",
			f.ObservedGeneration, f.Generation))
		return
	}
	// Sources are level-triggered: a newer observation already says
	// everything an older one could, so a late one is dropped rather than
	// allowed to move the record backwards.
	// A late Healthy fact still records healthy_at (lateHealthy).
	if prev != nil && f.ObservedAt.Before(prev.ObservedAt) {
		stale := fmt.Sprintf("stale fact: observed at %s, before the last observation of %s (%s)",
			stamp(f.ObservedAt), f.WorkloadKey(), stamp(prev.ObservedAt))
		if !r.lateHealthy(stale) {
			r.ignore(stale)
		}
		return
	}
	if f.ReleaseID == "" {
		r.ignore(fmt.Sprintf("argocd fact for revision %s carries no release_id; resolve the revision to a release before reducing", f.Revision))
		return
	}
	obs := observe(f)
	r.res.ReleaseEvent = isReleaseEvent(prev, f)
	rec := r.in.Record
	// A scale or restart of a release already seen on this workload never
	// opens anything or raises drift again: if its record is gone or
	// closed, the drift (if any) was reported when the release arrived.
	// The workload's observation follows it all the same, since it is what
	// runs there: kept as it was, a workload reported deleted (a
	// Deployment a Rollout took over, then released) would go on running
	// nothing for the server, and one that turned Degraded would stay
	// Healthy.
	if !r.res.ReleaseEvent && (rec == nil || !rec.Open()) {
		r.ignore(fmt.Sprintf("scale or restart of release %s, which has no open record; drift, if any, was reported when it arrived", f.ReleaseID))
		r.res.Observation = &obs
		return
	}
	next, ok := r.join(&obs)
	if !ok {
		return
	}
	// The release id rides on the workload's own metadata, so an undo of
	// the pod template (kubectl argo rollouts undo, kubectl rollout undo)
	// keeps it while the previous image runs. The id alone must not make
	// the record healthy: what runs is not what the record says, which is
	// drift (DESIGN.md, Facts: alert, never guess).
	if !next.RunsImage(f.Images) {
		reason := fmt.Sprintf("release %s's workload %s does not run its image %s (runs %s): an undo or an out-of-band change kept the release id",
			next.ReleaseID, f.WorkloadKey(), next.Image, strings.Join(f.Images, ", "))
		if r.res.ReleaseEvent {
			r.drift(&obs, reason)
			return
		}
		// These images arrived in an earlier fact, which reported the drift.
		// The observation follows what the workload reports all the same
		// (its phase: an undone canary going Healthy), as for a scale or
		// restart of a closed record: kept at the drift's first phase, it
		// would tell the server the workload is still where it was then.
		r.ignore(reason + "; drift was reported when these images arrived")
		r.res.Observation = &obs
		return
	}
	r.res.Observation = &obs
	r.apply(next, clusterTarget(f))
}

// deleted marks the fact's workload gone (its observation takes phase
// Deleted, which Observed leaves out), so its last report no longer claims
// that its release runs. It moves no record: a deletion says nothing of
// whether the release was healthy. A deletion of another workload of the
// same name (an older uid), or one observed before the workload's last
// report, is late and changes nothing. The observation keeps what the
// workload ran last, so a workload recreated with that release is not a
// new release event.
func (r *reduction) deleted() {
	f, prev := r.f, r.in.Previous
	if prev != nil && (prev.UID != f.UID || f.ObservedAt.Before(prev.ObservedAt)) {
		r.ignore(fmt.Sprintf("late deletion of %s (uid %s): the workload reported since", f.WorkloadKey(), f.UID))
		return
	}
	obs := observe(f)
	if prev != nil {
		obs.ReleaseID, obs.Images, obs.PodHash = prev.ReleaseID, slices.Clone(prev.Images), prev.PodHash
	}
	obs.Phase = PhaseDeleted
	r.ignore(fmt.Sprintf("workload %s was deleted: it runs no release any more", f.WorkloadKey()))
	r.res.Observation = &obs
}

// clusterTarget maps a cluster fact to the state it puts the record in.
// The abort flag wins over the phase: an aborted update has been abandoned
// and the pods serving are the stable ones, so any phase describes them,
// not this release (Argo Rollouts reports Degraded). A fact with the flag
// clear on an aborted record is a Retry and reopens it.
func clusterTarget(f Fact) State {
	if f.Abort {
		return StateAborted
	}
	switch f.Phase {
	case PhaseProgressing:
		return StateProgressing
	case PhasePaused:
		return StatePaused
	case PhaseHealthy:
		return StateHealthy
	case PhaseDegraded:
		return StateDegraded
	default: // PhaseSyncFailed; Validate rejects anything else.
		return StateFailed
	}
}

// isReleaseEvent: a new release arrived on the workload when its release id
// or its images changed. A scale or a restart keeps both (and the pod
// hash), so it is phase tracking of the release already there.
func isReleaseEvent(prev *Observation, f Fact) bool {
	if prev == nil {
		return true
	}
	return prev.ReleaseID != f.ReleaseID || !sameImages(prev.Images, f.Images)
}

// sameImages compares image lists as sets: container order carries no
// meaning for which release runs.
func sameImages(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

func observe(f Fact) Observation {
	return Observation{
		Source:     f.Source,
		Cluster:    f.Cluster,
		Namespace:  f.Namespace,
		Name:       f.Name,
		UID:        f.UID,
		ReleaseID:  f.ReleaseID,
		Images:     slices.Clone(f.Images),
		PodHash:    f.PodHash,
		Generation: f.Generation,
		Phase:      f.Phase,
		Step:       f.Step,
		Abort:      f.Abort,
		ObservedAt: f.ObservedAt,
	}
}
