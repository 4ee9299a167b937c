package records

import (
	"slices"
	"strings"
	"testing"
)

func TestRepeatedFactIDIsDuplicate(t *testing.T) {
	t.Parallel()
	r1 := record("R1", StateProgressing, 0, lastFact(1))
	// A resync re-sends what the workload showed last.
	res := Reduce(Input{Fact: fact("R1", PhaseHealthy, 9), Duplicate: true, Record: &r1, Previous: seen("R1", PhaseHealthy, 2), Now: at(9)})
	if res.Outcome != OutcomeDuplicate {
		t.Fatalf("outcome = %s, want duplicate", res.Outcome)
	}
	if len(res.Records) != 0 || res.Observation != nil || len(res.Audit) != 0 || len(res.Effects) != 0 || res.KeepFact {
		t.Errorf("a duplicate changed something: %+v", res)
	}
}

func TestRepeatIsAStoredFactWhoseWorkloadShowedNothingElseSince(t *testing.T) {
	t.Parallel()
	healthy := fact("R1", PhaseHealthy, 30, step(4))
	for _, tc := range []struct {
		name string
		in   Input
		want bool
	}{
		{"never stored", Input{Fact: healthy, Previous: seen("R1", PhaseHealthy, 25)}, false},
		{"stored, and the workload still shows it (a resync)", Input{Fact: healthy, Duplicate: true,
			Previous: observationOf(fact("R1", PhaseHealthy, 25, step(4)))}, true},
		{"stored, but the workload was Progressing since (it lost a pod)", Input{Fact: healthy, Duplicate: true,
			Previous: observationOf(fact("R1", PhaseProgressing, 28, step(4)))}, false},
		{"stored, at another step since", Input{Fact: healthy, Duplicate: true,
			Previous: observationOf(fact("R1", PhaseHealthy, 28, step(3)))}, false},
		{"stored, aborted since", Input{Fact: healthy, Duplicate: true,
			Previous: observationOf(fact("R1", PhaseHealthy, 28, step(4), aborted()))}, false},
		{"stored, something else since, but this copy is older than it (a late redelivery)", Input{Fact: healthy, Duplicate: true,
			Previous: observationOf(fact("R1", PhaseProgressing, 31, step(4)))}, true},
		{"stored, but the workload was annotated with another release since, its spec unchanged", Input{
			Fact: fact("R2", PhaseHealthy, 30, step(4), image(imageOf("R1"))), Duplicate: true,
			Previous: observationOf(fact("R1", PhaseHealthy, 25, step(4)))}, false},
		{"stored, and the workload never seen", Input{Fact: healthy, Duplicate: true}, true},
		{"a stored task fact", Input{Fact: taskFact("R1", TaskSuccess, 3), Duplicate: true}, true},
	} {
		if got := Repeat(tc.in); got != tc.want {
			t.Errorf("%s: Repeat = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func observationOf(f Fact) *Observation {
	o := observe(f)
	return &o
}

func TestClusterFactCountsOnlyWhenObservedGenerationMatches(t *testing.T) {
	t.Parallel()
	r1 := record("R1", StateProgressing, 0)
	lagging := fact("R1", PhaseHealthy, 2, func(f *Fact) { f.Generation, f.ObservedGeneration = 3, 2 })
	res := Reduce(Input{Fact: lagging, Record: &r1, Now: at(2)})
	if res.Outcome != OutcomeIgnored || !strings.Contains(res.Reason, "observed_generation 2 != generation 3") {
		t.Fatalf("outcome = %s (%s), want ignored naming both generations", res.Outcome, res.Reason)
	}
	if res.KeepFact || len(res.Records) != 0 || res.Observation != nil {
		t.Errorf("ignored fact must change nothing and not be kept (the caught-up fact has the same id): %+v", res)
	}
	if !hasAudit(res, AuditFactIgnored, "R1") {
		t.Errorf("audit = %v, want fact_ignored for R1", auditTypes(res))
	}
}

func TestScaleOrRestartIsNotAReleaseEvent(t *testing.T) {
	t.Parallel()
	r1 := record("R1", StateHealthy, 0, healthyAt(5), lastFact(5))
	prev := seen("R1", PhaseHealthy, 5)
	for name, f := range map[string]Fact{
		"scale":   fact("R1", PhaseProgressing, 30, gen(3)),
		"restart": fact("R1", PhaseProgressing, 30, gen(4), func(f *Fact) { f.PodHash = "hash-R1" }),
	} {
		t.Run(name, func(t *testing.T) {
			res := Reduce(Input{Fact: f, Record: &r1, Previous: prev, EverHealthy: true, Now: at(30)})
			if res.Outcome != OutcomeApplied || res.ReleaseEvent {
				t.Fatalf("outcome = %s release_event = %v, want applied, not a release event", res.Outcome, res.ReleaseEvent)
			}
			if got := recordOf(t, res, "R1"); got.State != StateProgressing || !got.HealthyAt.Equal(at(5)) {
				t.Errorf("R1 = %s healthy_at %v, want progressing with healthy_at kept", got.State, got.HealthyAt)
			}
			if len(res.Effects) != 0 || hasAudit(res, AuditDeploymentReceived, "R1") {
				t.Errorf("a %s emitted %v / %v; it is not a release", name, effectTypes(res), auditTypes(res))
			}
		})
	}
}

func TestHealthyAfterProgressingWithSameReleaseIsApplied(t *testing.T) {
	t.Parallel()
	r1 := record("R1", StateProgressing, 0, lastFact(1))
	res := Reduce(Input{Fact: fact("R1", PhaseHealthy, 4, step(4)), Record: &r1, Previous: seen("R1", PhaseProgressing, 1), Now: at(4)})
	if res.ReleaseEvent {
		t.Error("same release id and images: not a release event")
	}
	if got := recordOf(t, res, "R1"); got.State != StateHealthy {
		t.Fatalf("R1 = %s, want healthy: the release's own Healthy fact is a state change", got.State)
	}
	if !slices.Equal(effectTypes(res), []string{CDEventServiceDeployed}) {
		t.Errorf("effects = %v, want service.deployed", effectTypes(res))
	}
}

func TestNewReleaseOnTheWorkloadIsAReleaseEvent(t *testing.T) {
	t.Parallel()
	r2 := record("R2", StateOpened, 10)
	res := Reduce(Input{Fact: fact("R2", PhaseProgressing, 11, gen(3)), Record: &r2, Previous: seen("R1", PhaseHealthy, 5), Now: at(11)})
	if !res.ReleaseEvent || res.Outcome != OutcomeApplied {
		t.Fatalf("outcome = %s release_event = %v, want an applied release event", res.Outcome, res.ReleaseEvent)
	}
	if !hasAudit(res, AuditDeploymentReceived, "R2") {
		t.Errorf("audit = %v, want deployment_received for R2", auditTypes(res))
	}
	if res.Observation == nil || res.Observation.ReleaseID != "R2" || res.Observation.Generation != 3 {
		t.Errorf("observation = %+v, want R2 at generation 3", res.Observation)
	}
}

func TestImageChangeUnderTheSameReleaseIDIsAReleaseEvent(t *testing.T) {
	t.Parallel()
	r1 := record("R1", StateHealthy, 0, healthyAt(5), lastFact(5))
	res := Reduce(Input{Fact: fact("R1", PhaseProgressing, 20, gen(3), image(imageOf("hotfix"))), Record: &r1, Previous: seen("R1", PhaseHealthy, 5), Now: at(20)})
	if !res.ReleaseEvent {
		t.Error("images changed: a release event even though the release id did not")
	}
}

func TestUnknownReleaseIsDrift(t *testing.T) {
	t.Parallel()
	res := Reduce(Input{Fact: fact("R9", PhaseProgressing, 3), Previous: seen("R1", PhaseHealthy, 1), Now: at(3)})
	assertDrift(t, res, "R9", "matches no record")
}

func TestFirstObservationOfAnUnknownReleaseIsDrift(t *testing.T) {
	t.Parallel()
	res := Reduce(Input{Fact: fact("R9", PhaseHealthy, 3), Now: at(3)})
	assertDrift(t, res, "R9", "matches no record")
}

func TestHandRevertToSupersededReleaseIsDrift(t *testing.T) {
	t.Parallel()
	r1 := record("R1", StateSuperseded, 0, healthyAt(5), func(r *Record) { r.UpdatedAt = at(20) })
	res := Reduce(Input{Fact: fact("R1", PhaseProgressing, 40, gen(5)), Record: &r1, Previous: seen("R2", PhaseHealthy, 20), Now: at(40)})
	assertDrift(t, res, "R1", "hand revert")
}

func TestRevertToRolledBackReleaseIsDriftNotARollback(t *testing.T) {
	t.Parallel()
	r2 := record("R2", StateRolledBack, 10, healthyAt(15), func(r *Record) { r.UpdatedAt, r.RolledBackBy = at(30), "R3" })
	res := Reduce(Input{Fact: fact("R2", PhaseProgressing, 50, gen(6)), Record: &r2, Previous: seen("R3", PhaseHealthy, 30), Now: at(50)})
	assertDrift(t, res, "R2", "rolled-back")
}

func TestReleaseOfAnotherClusterIsDrift(t *testing.T) {
	t.Parallel()
	r1 := record("R1", StateProgressing, 0, func(r *Record) { r.Cluster = "prod-us" })
	res := Reduce(Input{Fact: fact("R1", PhaseHealthy, 3), Record: &r1, Now: at(3)})
	assertDrift(t, res, "R1", "belongs to cluster prod-us")
}

func assertDrift(t *testing.T, res Result, rel, reason string) {
	t.Helper()
	if res.Outcome != OutcomeDrift || !strings.Contains(res.Reason, reason) {
		t.Fatalf("outcome = %s (%s), want drift mentioning %q", res.Outcome, res.Reason, reason)
	}
	if len(res.Records) != 0 {
		t.Errorf("drift changed records %v; it must never guess", releaseIDs(res.Records))
	}
	if !hasAudit(res, AuditDriftDetected, rel) {
		t.Errorf("audit = %v, want drift_detected for %s", auditTypes(res), rel)
	}
	if len(res.Effects) != 1 || res.Effects[0].Kind != EffectAlert || res.Effects[0].Type != AlertDrift {
		t.Errorf("effects = %+v, want one drift alert", res.Effects)
	}
	if res.Observation == nil || res.Observation.ReleaseID != rel {
		t.Errorf("drift must keep the observation of %s (so it alerts once): %+v", rel, res)
	}
	// A fact matching no record is not kept, so a resync reaches the
	// record once it is opened; every other drift keeps it.
	if wantKeep := !strings.Contains(res.Reason, "matches no record"); res.KeepFact != wantKeep {
		t.Errorf("drift %q: keep_fact = %v, want %v", res.Reason, res.KeepFact, wantKeep)
	}
}

func TestDriftedWorkloadDoesNotAlertAgainOnScale(t *testing.T) {
	t.Parallel()
	res := Reduce(Input{Fact: fact("R9", PhaseProgressing, 9, gen(4)), Previous: seen("R9", PhaseHealthy, 3), Now: at(9)})
	if res.Outcome != OutcomeIgnored || len(res.Effects) != 0 {
		t.Errorf("outcome = %s effects %v, want ignored without a second alert", res.Outcome, effectTypes(res))
	}
}

func TestPhaseMapsToState(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		from  State
		fact  Fact
		want  State
		event AuditType // besides state_changed; "" for none
	}{
		{"Progressing -> progressing", StateOpened, fact("R1", PhaseProgressing, 2), StateProgressing, ""},
		{"Paused -> paused", StateProgressing, fact("R1", PhasePaused, 2, step(1)), StatePaused, ""},
		{"Progressing after a pause -> progressing", StatePaused, fact("R1", PhaseProgressing, 2, step(2)), StateProgressing, ""},
		{"Healthy -> healthy", StateProgressing, fact("R1", PhaseHealthy, 2), StateHealthy, ""},
		{"Degraded -> degraded", StateProgressing, fact("R1", PhaseDegraded, 2), StateDegraded, AuditFailureDetected},
		{"Degraded with abort -> aborted", StateProgressing, fact("R1", PhaseDegraded, 2, aborted()), StateAborted, AuditFailureDetected},
		{"SyncFailed -> failed", StateOpened, fact("R1", PhaseSyncFailed, 2), StateFailed, AuditFailureDetected},
		{"abort flag wins over a Healthy phase (the stable pods are healthy, not this release)", StateProgressing,
			fact("R1", PhaseHealthy, 2, aborted()), StateAborted, AuditFailureDetected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r1 := record("R1", tc.from, 0)
			res := Reduce(Input{Fact: tc.fact, Record: &r1, Now: at(2)})
			got := recordOf(t, res, "R1")
			if got.State != tc.want {
				t.Fatalf("state = %s, want %s", got.State, tc.want)
			}
			if !hasAudit(res, AuditStateChanged, "R1") {
				t.Errorf("audit = %v, want state_changed", auditTypes(res))
			}
			if tc.event != "" && !hasAudit(res, tc.event, "R1") {
				t.Errorf("audit = %v, want %s", auditTypes(res), tc.event)
			}
		})
	}
}

func TestRetryReopensAbortedRelease(t *testing.T) {
	t.Parallel()
	r2 := record("R2", StateAborted, 10, lastFact(14))
	res := Reduce(Input{Fact: fact("R2", PhaseProgressing, 20, step(3)), Record: &r2, Previous: seen("R2", PhaseDegraded, 14), Now: at(20)})
	if got := recordOf(t, res, "R2"); got.State != StateProgressing {
		t.Fatalf("R2 = %s, want progressing: a Progressing fact with abort clear is a Retry", got.State)
	}
}

func TestAbortFlagStillSetKeepsReleaseAborted(t *testing.T) {
	t.Parallel()
	r2 := record("R2", StateAborted, 10, lastFact(14))
	res := Reduce(Input{Fact: fact("R2", PhaseProgressing, 20, step(3), aborted()), Record: &r2, Previous: seen("R2", PhaseDegraded, 14), Now: at(20)})
	if got := recordOf(t, res, "R2"); got.State != StateAborted {
		t.Fatalf("R2 = %s, want aborted while the abort flag is set", got.State)
	}
	if hasAudit(res, AuditStateChanged, "R2") {
		t.Error("no transition, so no state_changed")
	}
}

func TestHealthyAtSetOnceNeverCleared(t *testing.T) {
	t.Parallel()
	r1 := record("R1", StateProgressing, 0, lastFact(1))
	res := Reduce(Input{Fact: fact("R1", PhaseHealthy, 4), Record: &r1, Now: at(5)})
	first := recordOf(t, res, "R1")
	if first.HealthyAt == nil || !first.HealthyAt.Equal(at(4)) {
		t.Fatalf("healthy_at = %v, want the Healthy fact's observed_at (minute 4)", first.HealthyAt)
	}
	for _, f := range []Fact{
		fact("R1", PhaseDegraded, 20, gen(3)),
		fact("R1", PhaseHealthy, 30, gen(4)),
	} {
		res = Reduce(Input{Fact: f, Record: &first, Now: f.ObservedAt})
		first = recordOf(t, res, "R1")
		if first.HealthyAt == nil || !first.HealthyAt.Equal(at(4)) {
			t.Fatalf("after %s: healthy_at = %v, want minute 4 kept", f.Phase, first.HealthyAt)
		}
	}
}

func TestLastFactAtMovesOnEveryAppliedFact(t *testing.T) {
	t.Parallel()
	r1 := record("R1", StatePaused, 0, lastFact(1))
	res := Reduce(Input{Fact: fact("R1", PhasePaused, 7, step(2)), Record: &r1, Previous: seen("R1", PhasePaused, 1), Now: at(8)})
	got := recordOf(t, res, "R1")
	if got.LastFactAt == nil || !got.LastFactAt.Equal(at(7)) || !got.UpdatedAt.Equal(at(8)) {
		t.Errorf("last_fact_at = %v updated_at = %v, want minute 7 and minute 8, even with no state change", got.LastFactAt, got.UpdatedAt)
	}
	if hasAudit(res, AuditStateChanged, "R1") || !hasAudit(res, AuditFactReceived, "R1") {
		t.Errorf("audit = %v, want fact_received only", auditTypes(res))
	}
}

func TestStaleFactForTheWorkloadIsIgnored(t *testing.T) {
	t.Parallel()
	// R2 arrived on the workload at minute 31; R1's Degraded fact from
	// minute 20 is delivered after it. R1's own last fact is older still,
	// so only the workload's observation shows the fact is out of date.
	r1 := record("R1", StateHealthy, 0, healthyAt(5), lastFact(5))
	res := Reduce(Input{Fact: fact("R1", PhaseDegraded, 20), Record: &r1, Previous: seen("R2", PhaseProgressing, 31), Now: at(32)})
	if res.Outcome != OutcomeIgnored || !strings.Contains(res.Reason, "stale") || !strings.Contains(res.Reason, "prod-eu/checkout/rollout/checkout") {
		t.Fatalf("outcome = %s (%s), want ignored as stale for the workload", res.Outcome, res.Reason)
	}
}

func TestStaleFactForTheRecordIsIgnored(t *testing.T) {
	t.Parallel()
	// A task success already made R1 healthy; the Rollout's older
	// Progressing fact arrives afterwards.
	r1 := record("R1", StateHealthy, 0, healthyAt(5), lastFact(5))
	res := Reduce(Input{Fact: fact("R1", PhaseProgressing, 3), Record: &r1, Now: at(6)})
	if res.Outcome != OutcomeIgnored || !strings.Contains(res.Reason, "last fact") {
		t.Fatalf("outcome = %s (%s), want ignored as older than the record's last fact", res.Outcome, res.Reason)
	}
}

func TestLateFactForClosedReleaseIsIgnoredNotDrift(t *testing.T) {
	t.Parallel()
	r1 := record("R1", StateSuperseded, 0, healthyAt(5), func(r *Record) { r.UpdatedAt = at(20) })
	res := Reduce(Input{Fact: taskFact("R1", TaskSuccess, 6), Record: &r1, Now: at(25)})
	if res.Outcome != OutcomeIgnored || !strings.Contains(res.Reason, "late fact") {
		t.Fatalf("outcome = %s (%s), want ignored as late", res.Outcome, res.Reason)
	}
}

func TestInvalidFactIsIgnoredNamingTheField(t *testing.T) {
	t.Parallel()
	res := Reduce(Input{Fact: fact("R1", "Unknown", 1), Now: at(1)})
	if res.Outcome != OutcomeIgnored || !strings.Contains(res.Reason, "phase:") {
		t.Errorf("outcome = %s (%s), want ignored naming phase", res.Outcome, res.Reason)
	}
}

func TestEveryAuditEventCarriesDeliveryAndFact(t *testing.T) {
	t.Parallel()
	r1 := record("R0", StateHealthy, -10, healthyAt(-5))
	r2 := record("R1", StatePaused, 0, lastFact(1))
	f := fact("R1", PhaseHealthy, 4)
	res := Reduce(Input{Fact: f, Record: &r2, Siblings: []Record{r1}, DeliveryID: "d-77", Now: at(5)})
	if len(res.Audit) < 3 {
		t.Fatalf("audit = %v, want fact_received, state_changed and the sibling's state_changed", auditTypes(res))
	}
	for _, e := range res.Audit {
		if e.DeliveryID != "d-77" || e.FactID != f.ID() || !e.At.Equal(at(5)) || !e.Type.Valid() || e.Message == "" {
			t.Errorf("audit event %+v: want delivery d-77, the fact id, At = now, a known type and a message", e)
		}
	}
}

// A deletion marks the workload's observation gone and moves no record; a
// deletion of an older workload of the same name (another uid) is late.
func TestReduceDeletedWorkload(t *testing.T) {
	t.Parallel()
	prev := seen("R1", PhaseHealthy, 5)
	res := Reduce(Input{Fact: fact("R1", PhaseDeleted, 20), Previous: prev, Now: at(20)})
	if res.Observation == nil || res.Observation.Phase != PhaseDeleted || res.Observation.ReleaseID != "R1" || len(res.Records) != 0 {
		t.Fatalf("result = %+v, want the observation marked Deleted and no record moved", res)
	}
	res = Reduce(Input{Fact: fact("R1", PhaseDeleted, 20, func(f *Fact) { f.UID = "older-uid" }), Previous: prev, Now: at(20)})
	if res.Observation != nil || res.Outcome != OutcomeIgnored {
		t.Errorf("result = %+v, want a deletion of another uid ignored", res)
	}
}

// The agent re-sends every workload's state on each resync (15 min). A
// fact the reducer ignores keeps no id, so its copies are no duplicates;
// each one is answered ignored again, but only the first writes an audit
// event: a copy that tells nothing the workload's observation does not
// would add one per workload per resync, without bound.
func TestAnUnchangedReportOfAnIgnoredWorkloadWritesNoAuditEvent(t *testing.T) {
	t.Parallel()
	superseded := record("R1", StateSuperseded, 0, healthyAt(5), lastFact(5))
	r2 := record("R2", StateProgressing, 10, lastFact(11))
	scaled := fact("R9", PhaseHealthy, 30, gen(4))
	drifted := fact("R2", PhaseHealthy, 36, gen(4), image(imageOf("R1")))
	later := func(f Fact, m int) Fact { f.ObservedAt = at(m); return f }
	for _, tc := range []struct {
		name    string
		in      Input
		audited bool
	}{
		{"a resync of a drifted workload's scale: no record, no audit",
			Input{Fact: later(scaled, 45), Previous: observationOf(scaled)}, false},
		{"a resync of a superseded release's workload: no audit",
			Input{Fact: fact("R1", PhaseHealthy, 45), Record: &superseded, Previous: seen("R1", PhaseHealthy, 30)}, false},
		{"a resync of images drifted under an open record's id: no audit",
			Input{Fact: later(drifted, 50), Record: &r2, Previous: observationOf(drifted)}, false},
		{"a late copy of the same report: no audit",
			Input{Fact: later(scaled, 20), Previous: observationOf(scaled)}, false},
		{"the first report of the scale: audited",
			Input{Fact: scaled, Previous: seen("R9", PhaseHealthy, 3)}, true},
		{"the same workload at another phase since: audited",
			Input{Fact: later(scaled, 45), Previous: observationOf(fact("R9", PhaseProgressing, 40, gen(4)))}, true},
		{"the same workload restarted (another pod hash): audited",
			Input{Fact: later(scaled, 45), Previous: observationOf(fact("R9", PhaseHealthy, 40, gen(4), func(f *Fact) { f.PodHash = "restarted" }))}, true},
		{"another workload of that name (another uid): audited",
			Input{Fact: later(scaled, 45), Previous: observationOf(fact("R9", PhaseHealthy, 40, gen(4), func(f *Fact) { f.UID = "older-uid" }))}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now = tc.in.Fact.ObservedAt
			res := Reduce(tc.in)
			if res.Outcome != OutcomeIgnored || res.Reason == "" {
				t.Fatalf("outcome %s (%q), want ignored with its reason, answered to the agent either way", res.Outcome, res.Reason)
			}
			if got := hasAudit(res, AuditFactIgnored, tc.in.Fact.ReleaseKey()); got != tc.audited || len(res.Audit) > 1 {
				t.Errorf("audit %v, want fact_ignored written: %v", auditTypes(res), tc.audited)
			}
		})
	}
}
