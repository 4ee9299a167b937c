package records

import (
	"fmt"
	"slices"
	"time"
)

// Outcome is what the reducer made of a fact.
type Outcome string

const (
	// OutcomeApplied: the fact moved or tracked an existing record, or,
	// late but Healthy, recorded its healthy_at (Reason says so).
	OutcomeApplied Outcome = "applied"
	// OutcomeDuplicate: the fact was applied already and its workload
	// showed nothing else since (Repeat); nothing changes.
	OutcomeDuplicate Outcome = "duplicate"
	// OutcomeIgnored: the fact cannot be trusted or is out of date; Reason
	// says why. Its id is not kept, so the same id may count later (an
	// observed_generation that caught up has the same id).
	OutcomeIgnored Outcome = "ignored"
	// OutcomeDrift: the cluster runs a release no open record explains.
	OutcomeDrift Outcome = "drift"
	// OutcomeOpened: a task fact opened a new record.
	OutcomeOpened Outcome = "opened"
)

// Observation is the last thing seen on one workload, kept by the store per
// WorkloadKey so the reducer can tell a release from a scale or a restart.
type Observation struct {
	// Source is the kind of workload (deployment, rollout, argocd) that
	// reported; empty in observations stored before it was kept.
	Source     Source    `json:"source,omitempty"`
	Cluster    string    `json:"cluster"`
	Namespace  string    `json:"namespace"`
	Name       string    `json:"name"`
	UID        string    `json:"uid"`
	ReleaseID  string    `json:"release_id"`
	Images     []string  `json:"images"`
	PodHash    string    `json:"pod_hash"`
	Generation int64     `json:"generation"`
	Phase      Phase     `json:"phase"`
	Step       int       `json:"step"`
	Abort      bool      `json:"abort,omitempty"`
	ObservedAt time.Time `json:"observed_at"`
}

// Key is the same key as the fact's WorkloadKey.
func (o Observation) Key() string { return workloadKey(o.Cluster, o.Namespace, o.Source, o.Name) }

// legacyKey is where an observation of this workload stored before
// migration 16 without a source may still be: saving this one removes it.
func (o Observation) legacyKey() string { return legacyWorkloadKey(o.Cluster, o.Namespace, o.Name) }

// Input is what the store loads for one fact.
type Input struct {
	Fact Fact
	// Duplicate: a fact with Fact.ID() is already stored. It is a repeat
	// (Repeat) unless the workload showed something else since.
	Duplicate bool
	// Previous is the stored Observation for Fact.WorkloadKey(); nil when
	// the workload was never seen, and always nil for task facts. A store
	// loads it for a duplicate too, so Repeat can tell.
	Previous *Observation
	// Record is the record whose release_id is Fact.ReleaseKey(), or nil.
	Record *Record
	// Siblings are the other records of the record's (or, for a task fact,
	// the fact's) app, environment and cluster that are not superseded or
	// rolled-back. Records of another target passed by mistake are skipped.
	Siblings []Record
	// EverHealthy: some record of that app, environment and cluster has
	// healthy_at set (closed ones included). It picks service.deployed over
	// service.upgraded.
	EverHealthy bool
	// DeliveryID is copied onto every audit event.
	DeliveryID string
	Now        time.Time
}

// Result is what the store writes, in one transaction, for one fact.
type Result struct {
	Outcome Outcome `json:"outcome"`
	// Reason explains an ignored, duplicate or drift outcome.
	Reason string `json:"reason,omitempty"`
	FactID string `json:"fact_id"`
	// KeepFact: store the fact and its id, so a repeat is a duplicate.
	KeepFact bool `json:"keep_fact"`
	// ReleaseEvent: the release id or the images changed on the workload
	// (a new release arrived), as opposed to a scale, restart or phase
	// change of the release already there.
	ReleaseEvent bool `json:"release_event"`
	// Records are the records to insert (OutcomeOpened: the first one) or
	// update, the fact's record first, then siblings it closed.
	Records []Record `json:"records,omitempty"`
	// Observation replaces the stored one for its Key(); nil: leave it.
	Observation *Observation `json:"observation,omitempty"`
	Audit       []AuditEvent `json:"audit,omitempty"`
	Effects     []Effect     `json:"effects,omitempty"`
}

// Reduce decides what one fact means. It is pure: everything it needs is in
// in, and in.Now is the only clock.
func Reduce(in Input) Result {
	r := &reduction{in: in, f: in.Fact}
	r.res.FactID = in.Fact.ID()
	switch {
	case Repeat(in):
		r.res.Outcome = OutcomeDuplicate
		r.res.Reason = "fact " + r.res.FactID + " was already applied"
	case r.validate():
		if r.f.IsTask() {
			r.task()
		} else {
			r.cluster()
		}
	}
	return r.res
}

// Repeat reports whether in's fact changes nothing because it was applied
// already: its id is stored, and its workload has shown nothing else since
// (or the fact is older than what it showed). A cluster fact's id is (uid,
// generation, phase, step, abort), so a workload that comes back to an
// earlier phase within one generation — a healthy release that lost a pod
// and is healthy again, a Retry of an aborted canary that starts again at
// step 0 — sends a fact with an id already stored; it is a new
// observation, not a repeat, and must move the record. So is one that
// names another release: the release id rides on the workload's metadata,
// so a release of the same image changes it without a new generation,
// and the id, which leaves the release out, is the previous release's.
// A store loads no more than the duplicate check and the workload for a
// repeat.
func Repeat(in Input) bool {
	f, prev := in.Fact, in.Previous
	if !in.Duplicate || f.IsTask() || prev == nil {
		return in.Duplicate
	}
	same := prev.UID == f.UID && prev.Generation == f.Generation && prev.Phase == f.Phase &&
		prev.Step == f.Step && prev.Abort == f.Abort && prev.ReleaseID == f.ReleaseID
	return same || !f.ObservedAt.After(prev.ObservedAt)
}

// reduction carries one Reduce call's input and the result being built.
type reduction struct {
	in  Input
	f   Fact
	res Result
	// unchanged: the cluster fact reports what its workload's observation
	// already says (unchangedReport), so ignoring it writes no audit event.
	unchanged bool
}

func (r *reduction) validate() bool {
	if err := r.f.Validate(); err != nil {
		r.ignore("invalid fact: " + err.Error())
		return false
	}
	return true
}

// ignore ends the reduction with OutcomeIgnored. The audit event keeps the
// reason next to the release's story without changing it, once: a report
// that repeats the workload's observation (unchangedReport) is answered
// with the same reason but writes none, or every resync of an ignored
// workload would add one per workload, without bound.
func (r *reduction) ignore(reason string) {
	r.res = Result{Outcome: OutcomeIgnored, Reason: reason, FactID: r.res.FactID}
	if !r.unchanged {
		r.audit(AuditFactIgnored, r.f.ReleaseKey(), "fact ignored: "+reason, r.factData())
	}
}

// unchangedReport reports whether a cluster fact says nothing its workload's
// stored observation does not: the same uid, generation, phase, step,
// abort flag, release id, pod hash and images. The agent re-sends every
// workload's state on each resync (15 min); an ignored fact's id is not
// kept, so such a copy is not a duplicate (Repeat), and is ignored again.
// Its observed_at may differ: it says when, not what.
func unchangedReport(prev *Observation, f Fact) bool {
	return prev != nil && !f.IsTask() && prev.UID == f.UID && prev.Generation == f.Generation &&
		prev.Phase == f.Phase && prev.Step == f.Step && prev.Abort == f.Abort &&
		prev.ReleaseID == f.ReleaseID && prev.PodHash == f.PodHash && sameImages(prev.Images, f.Images)
}

// join checks the record the store found against the fact and returns it
// when the fact may be applied to it. Otherwise it ends the reduction:
// ignored when the fact is late or the input is inconsistent, drift when
// the release is unknown, closed, or belongs to another cluster.
func (r *reduction) join(obs *Observation) (Record, bool) {
	id, rec := r.f.ReleaseKey(), r.in.Record
	switch {
	case rec != nil && rec.ReleaseID != id:
		r.ignore(fmt.Sprintf("store passed record %s for release %s", rec.ReleaseID, id))
	case rec != nil && rec.Cluster != "" && r.f.Cluster != "" && rec.Cluster != r.f.Cluster:
		r.drift(obs, fmt.Sprintf("release %s belongs to cluster %s but was observed in cluster %s", id, rec.Cluster, r.f.Cluster))
	case rec != nil && !rec.Open() && !r.f.ObservedAt.After(rec.UpdatedAt):
		r.ignore(fmt.Sprintf("late fact: release %s was already %s at %s, before this fact was observed (%s)",
			id, rec.State, stamp(rec.UpdatedAt), stamp(r.f.ObservedAt)))
	case rec != nil && !rec.Open():
		r.drift(obs, fmt.Sprintf("release %s is %s, yet it was observed again: a hand revert or an out-of-band deploy, not a rollback", id, rec.State))
	case rec == nil:
		r.drift(obs, fmt.Sprintf("release %s matches no record", id))
		// The fact's id is not kept: the record may be opened after the
		// workload reported (release tooling that posts once the deploy
		// started), and the source's next resync of this same state must
		// then reach it rather than be dropped as a repeat. Until then the
		// stored observation keeps a resync from alerting again: it is a
		// scale or restart of a release with no open record (cluster).
		r.res.KeepFact = false
	case rec.LastFactAt != nil && r.f.ObservedAt.Before(*rec.LastFactAt):
		stale := fmt.Sprintf("stale fact: observed at %s, before release %s's last fact (%s)",
			stamp(r.f.ObservedAt), id, stamp(*rec.LastFactAt))
		if !r.lateHealthy(stale) {
			r.ignore(stale)
		}
	default:
		return *rec, true
	}
	return Record{}, false
}

// drift records that the workload runs a release ripcord cannot explain.
// It never guesses which record was meant: it alerts, once per fact id,
// and stores the observation so later scales of the same workload do not
// alert again.
func (r *reduction) drift(obs *Observation, reason string) {
	r.res.Outcome = OutcomeDrift
	r.res.Reason = reason
	r.res.KeepFact = true
	r.res.Observation = obs
	data := r.factData()
	r.audit(AuditFactReceived, r.f.ReleaseKey(), "fact received: "+r.describe(), data)
	r.audit(AuditDriftDetected, r.f.ReleaseKey(), "drift: "+reason, data)
	r.res.Effects = append(r.res.Effects, Effect{
		Kind:      EffectAlert,
		Type:      AlertDrift,
		Key:       "alert/" + AlertDrift + "/" + r.res.FactID,
		ReleaseID: r.f.ReleaseKey(),
		Message:   reason,
		Data:      stringData(data),
	})
}

func (r *reduction) audit(t AuditType, releaseID, msg string, data map[string]any) {
	r.res.Audit = append(r.res.Audit, AuditEvent{
		Type:       t,
		ReleaseID:  releaseID,
		DeliveryID: r.in.DeliveryID,
		FactID:     r.res.FactID,
		At:         r.in.Now,
		Message:    msg,
		Data:       data,
	})
}

// describe is a one-line summary of the fact for audit messages.
func (r *reduction) describe() string {
	f := r.f
	if f.IsTask() {
		return fmt.Sprintf("task %s run %d attempt %d %s for %s/%s", f.Repository, f.WorkflowRunID, f.RunAttempt, f.Status, f.App, f.Environment)
	}
	s := fmt.Sprintf("%s %s %s/%s/%s %s", f.Source, f.ReleaseKey(), f.Cluster, f.Namespace, f.Name, f.Phase)
	if f.StepCount > 0 {
		s += fmt.Sprintf(" step %d/%d", f.Step, f.StepCount)
	}
	if f.Abort {
		s += " (abort)"
	}
	return s
}

// factData is what the audit trail keeps of the fact.
func (r *reduction) factData() map[string]any {
	f := r.f
	d := map[string]any{"source": string(f.Source), "observed_at": stamp(f.ObservedAt)}
	put := func(k string, v any, keep bool) {
		if keep {
			d[k] = v
		}
	}
	put("cluster", f.Cluster, f.Cluster != "")
	if f.IsTask() {
		put("repository", f.Repository, true)
		put("workflow_run_id", f.WorkflowRunID, true)
		put("run_attempt", f.RunAttempt, true)
		put("status", string(f.Status), true)
		put("failure_type", f.FailureType, f.FailureType != "")
		put("deployment_id", f.DeploymentID, f.DeploymentID != "")
		put("version", f.Version, f.Version != "")
		return d
	}
	put("workload", f.Namespace+"/"+f.Name, true)
	put("generation", f.Generation, true)
	put("phase", string(f.Phase), true)
	put("step", f.Step, f.StepCount > 0)
	put("step_count", f.StepCount, f.StepCount > 0)
	put("abort", f.Abort, f.Abort)
	put("pod_hash", f.PodHash, f.PodHash != "")
	put("images", slices.Clone(f.Images), len(f.Images) > 0)
	put("revision", f.Revision, f.Revision != "")
	return d
}

func stringData(d map[string]any) map[string]string {
	out := make(map[string]string, len(d))
	for k, v := range d {
		out[k] = fmt.Sprint(v)
	}
	return out
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
