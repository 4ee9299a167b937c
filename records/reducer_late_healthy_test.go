package records

import (
	"slices"
	"strings"
	"testing"
)

// A Healthy fact older than the workload's last observation: the record,
// degraded since, gets healthy_at and nothing else moves.
func TestLateHealthyRecordsHealthyAtOnly(t *testing.T) {
	t.Parallel()
	r1 := record("R1", StateDegraded, 0, lastFact(20))
	prev := seen("R1", PhaseDegraded, 20)
	res := Reduce(Input{Fact: fact("R1", PhaseHealthy, 10), Previous: prev, Record: &r1, Now: at(21)})

	if res.Outcome != OutcomeApplied || !strings.Contains(res.Reason, "healthy_at set to") {
		t.Fatalf("outcome %s (%s), want applied saying healthy_at was set", res.Outcome, res.Reason)
	}
	got := recordOf(t, res, "R1")
	if got.HealthyAt == nil || !got.HealthyAt.Equal(at(10)) {
		t.Errorf("healthy_at = %v, want the fact's observed time %s", got.HealthyAt, at(10))
	}
	if got.State != StateDegraded || !got.LastFactAt.Equal(at(20)) {
		t.Errorf("R1 = %s, last fact %v: the state and last_fact_at must not move back", got.State, got.LastFactAt)
	}
	if res.Observation != nil {
		t.Errorf("observation replaced with %+v: the workload's newer one must stay", res.Observation)
	}
	if !res.KeepFact {
		t.Error("fact not kept: its redelivery would not be a duplicate")
	}
	if !slices.Equal(auditTypes(res), []AuditType{AuditFactReceived}) || res.Audit[0].Data["healthy_at"] != stamp(at(10)) {
		t.Errorf("audit = %v %v, want one fact_received naming healthy_at", auditTypes(res), res.Audit)
	}
	if !slices.Equal(effectTypes(res), []string{CDEventServiceDeployed}) {
		t.Errorf("effects = %v, want the first healthy's service.deployed", effectTypes(res))
	}
}

// The record's last fact (from another source of the same release) is newer
// than the Healthy fact while the workload's observation is not.
func TestLateHealthyAgainstTheRecordsLastFact(t *testing.T) {
	t.Parallel()
	r1 := record("R1", StateFailed, 0, lastFact(20))
	res := Reduce(Input{Fact: fact("R1", PhaseHealthy, 10), Record: &r1, Now: at(21)})
	if got := recordOf(t, res, "R1"); res.Outcome != OutcomeApplied || got.HealthyAt == nil || got.State != StateFailed {
		t.Errorf("outcome %s (%s), R1 %s healthy_at %v; want applied, failed with healthy_at", res.Outcome, res.Reason, got.State, got.HealthyAt)
	}
}

func TestLateFactsThatRecordNoHealthyAt(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		f    Fact
		rec  Record
	}{
		{"healthy_at already set", fact("R1", PhaseHealthy, 10), record("R1", StateDegraded, 0, healthyAt(5), lastFact(20))},
		{"a stale Degraded", fact("R1", PhaseDegraded, 10), record("R1", StateProgressing, 0, lastFact(20))},
		{"healthy with the abort flag: the stable pods", fact("R1", PhaseHealthy, 10, aborted()), record("R1", StateDegraded, 0, lastFact(20))},
		{"another image under the release id", fact("R1", PhaseHealthy, 10, image(imageOf("R0"))), record("R1", StateDegraded, 0, lastFact(20))},
		{"another cluster", fact("R1", PhaseHealthy, 10), record("R1", StateDegraded, 0, lastFact(20), func(r *Record) { r.Cluster = "prod-us" })},
		{"the controller had not seen the spec", fact("R1", PhaseHealthy, 10, func(f *Fact) { f.ObservedGeneration = 1 }), record("R1", StateDegraded, 0, lastFact(20))},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := Reduce(Input{Fact: c.f, Previous: seen("R1", PhaseDegraded, 20), Record: &c.rec, Now: at(21)})
			if res.Outcome != OutcomeIgnored || len(res.Records) > 0 || len(res.Effects) > 0 {
				t.Errorf("outcome %s (%s), records %v, effects %v; want ignored, nothing written", res.Outcome, res.Reason, releaseIDs(res.Records), effectTypes(res))
			}
		})
	}
}

// A rollback whose Healthy came late, while it was degraded, leaves its
// target alone; when it turns healthy for real it marks the target
// rolled-back and sends service.rolledback, once.
func TestLateHealthyRollbackMarksItsTargetWhenHealthyNow(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	s.run(slices.Concat(canary(), release2(), []replayStep{
		register(record("R3", "", 60, rollbackOf("R2"), func(r *Record) { r.Image = imageOf("R1") })),
		deliver(fact("R3", PhaseProgressing, 61, gen(5), image(imageOf("R1"))), 61, OutcomeApplied, states{"R3": StateProgressing}),
		deliver(fact("R3", PhaseDegraded, 70, gen(5), image(imageOf("R1"))), 70, OutcomeApplied, states{"R3": StateDegraded, "R2": StateHealthy}),
		deliver(fact("R3", PhaseHealthy, 65, gen(5), step(4), image(imageOf("R1"))), 71, OutcomeApplied, states{"R3": StateDegraded, "R2": StateHealthy}),
		deliver(fact("R3", PhaseHealthy, 80, gen(5), step(4), image(imageOf("R1"))), 80, OutcomeApplied, states{"R3": StateHealthy, "R2": StateRolledBack}),
		deliver(fact("R3", PhaseProgressing, 90, gen(6), image(imageOf("R1"))), 90, OutcomeApplied, states{"R3": StateProgressing}),
		deliver(fact("R3", PhaseHealthy, 92, gen(6), image(imageOf("R1"))), 92, OutcomeApplied, states{"R3": StateHealthy}),
	}))
	want := []string{CDEventServiceDeployed + ":R1", CDEventServiceUpgraded + ":R2",
		CDEventServiceUpgraded + ":R3", CDEventServiceRolledBack + ":R3"}
	if got := s.effectTypes(); !slices.Equal(got, want) {
		t.Errorf("effects sent:\n  %v\nwant\n  %v", got, want)
	}
	if r2 := s.recs["R2"]; r2.RolledBackBy != "R3" {
		t.Errorf("R2 rolled_back_by %q, want R3", r2.RolledBackBy)
	}
	if r3 := s.recs["R3"]; r3.HealthyAt == nil || !r3.HealthyAt.Equal(at(65)) {
		t.Errorf("R3 healthy_at %v, want the late fact's %s", r3.HealthyAt, at(65))
	}
}
