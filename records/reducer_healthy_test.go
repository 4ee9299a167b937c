package records

import (
	"slices"
	"testing"
)

func TestHealthySupersedesOlderSiblings(t *testing.T) {
	t.Parallel()
	siblings := []Record{
		record("R0", StateHealthy, -20, healthyAt(-15)),
		record("Rab", StateAborted, -10),
		record("Rop", StateOpened, -5),
		record("R9", StateOpened, 30), // created after R1: not R1's to close
		record("Rus", StateHealthy, -20, healthyAt(-15), func(r *Record) { r.Cluster = "prod-us" }),
		record("Rstg", StateHealthy, -20, healthyAt(-15), func(r *Record) { r.Environment = "staging" }),
	}
	r1 := record("R1", StatePaused, 0, lastFact(3))
	res := Reduce(Input{Fact: fact("R1", PhaseHealthy, 40), Record: &r1, Siblings: siblings, EverHealthy: true, Now: at(41)})

	for _, rel := range []string{"R0", "Rab", "Rop"} {
		got := recordOf(t, res, rel)
		if got.State != StateSuperseded || !got.UpdatedAt.Equal(at(41)) {
			t.Errorf("%s = %s updated %s, want superseded now", rel, got.State, got.UpdatedAt)
		}
		if !hasAudit(res, AuditStateChanged, rel) {
			t.Errorf("no state_changed for %s", rel)
		}
	}
	for _, rel := range []string{"R9", "Rus", "Rstg"} {
		for _, r := range res.Records {
			if r.ReleaseID == rel {
				t.Errorf("%s changed to %s: a newer release or another target must never be superseded", rel, r.State)
			}
		}
	}
	if res.Records[0].ReleaseID != "R1" {
		t.Errorf("records = %v, want the fact's record first", releaseIDs(res.Records))
	}
	if got := recordOf(t, res, "R0"); got.HealthyAt == nil {
		t.Error("superseding R0 cleared its healthy_at; eligibility needs it")
	}
}

func TestRollbackHealthyRollsBackItsTarget(t *testing.T) {
	t.Parallel()
	siblings := []Record{
		record("R1", StateHealthy, 0, healthyAt(5)),     // the release rolled back
		record("R0", StateDegraded, -10, healthyAt(-5)), // older, just superseded
	}
	r2 := record("R2", StateProgressing, 20, rollbackOf("R1"), lastFact(21))
	res := Reduce(Input{Fact: fact("R2", PhaseHealthy, 25), Record: &r2, Siblings: siblings, EverHealthy: true, Now: at(26)})

	r1 := recordOf(t, res, "R1")
	if r1.State != StateRolledBack || r1.RolledBackBy != "R2" {
		t.Errorf("R1 = %s rolled_back_by %q, want rolled-back by R2", r1.State, r1.RolledBackBy)
	}
	if got := recordOf(t, res, "R0"); got.State != StateSuperseded {
		t.Errorf("R0 = %s, want superseded (the rollback names R1, not R0)", got.State)
	}
	if !hasAudit(res, AuditRollbackCompleted, "R2") {
		t.Errorf("audit = %v, want rollback_completed for R2", auditTypes(res))
	}
	if want := []string{CDEventServiceUpgraded, CDEventServiceRolledBack}; !slices.Equal(effectTypes(res), want) {
		t.Errorf("effects = %v, want %v", effectTypes(res), want)
	}
}

// A rollback of a release ripcord does not know (older than ripcord, past
// retention) or that is closed already completes, but sends no
// service.rolledback: nothing was rolled back by it, and the event would
// say something was. It still sends its own deployed or upgraded.
func TestRollbackOfAReleaseNotOpenCompletesWithoutRolledBack(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		siblings []Record
	}{
		{"unknown", nil},
		{"superseded already", []Record{record("R1", StateSuperseded, 0, healthyAt(5))}},
	} {
		r2 := record("R2", StateProgressing, 20, rollbackOf("R1"), lastFact(21))
		res := Reduce(Input{Fact: fact("R2", PhaseHealthy, 25), Record: &r2, Siblings: c.siblings, EverHealthy: true, Now: at(26)})
		if len(res.Records) != 1 {
			t.Errorf("%s: records = %v, want only R2", c.name, releaseIDs(res.Records))
		}
		if want := []string{CDEventServiceUpgraded}; !slices.Equal(effectTypes(res), want) {
			t.Errorf("%s: effects = %v, want %v and no service.rolledback", c.name, effectTypes(res), want)
		}
		if !hasAudit(res, AuditRollbackCompleted, "R2") {
			t.Errorf("%s: audit = %v, want rollback_completed for R2", c.name, auditTypes(res))
		}
	}
}

func TestFirstHealthyInTargetEmitsDeployed(t *testing.T) {
	t.Parallel()
	r1 := record("R1", StateProgressing, 0, lastFact(1))
	res := Reduce(Input{Fact: fact("R1", PhaseHealthy, 4), Record: &r1, Now: at(4)})
	if !slices.Equal(effectTypes(res), []string{CDEventServiceDeployed}) {
		t.Fatalf("effects = %v, want service.deployed", effectTypes(res))
	}
	e := res.Effects[0]
	if e.Kind != EffectCDEvent || e.ReleaseID != "R1" || e.Data["digest"] != digestOf("R1") || e.Data["environment"] != "prod" || e.Data["healthy_at"] != stamp(at(4)) {
		t.Errorf("effect = %+v, want a cdevent for R1 carrying digest, environment and healthy_at", e)
	}
}

func TestHealthyAfterAnEarlierHealthyReleaseEmitsUpgraded(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]Input{
		"store says a closed release was healthy": {EverHealthy: true},
		"an open sibling was healthy":             {Siblings: []Record{record("R0", StateHealthy, -10, healthyAt(-5))}},
	} {
		t.Run(name, func(t *testing.T) {
			r1 := record("R1", StateProgressing, 0, lastFact(1))
			in.Fact, in.Record, in.Now = fact("R1", PhaseHealthy, 4), &r1, at(4)
			if got := effectTypes(Reduce(in)); !slices.Equal(got, []string{CDEventServiceUpgraded}) {
				t.Errorf("effects = %v, want service.upgraded", got)
			}
		})
	}
}

func TestSecondHealthyDoesNotReemitCDEvents(t *testing.T) {
	t.Parallel()
	rollback := record("R2", StateHealthy, 20, rollbackOf("R1"), healthyAt(25), lastFact(25))
	for name, in := range map[string]Input{
		"healthy resync with a new id": {Fact: fact("R2", PhaseHealthy, 40, step(4)), Previous: seen("R2", PhaseHealthy, 25)},
		"healthy after a restart":      {Fact: fact("R2", PhaseHealthy, 40, gen(9)), Previous: seen("R2", PhaseProgressing, 35)},
	} {
		t.Run(name, func(t *testing.T) {
			r := rollback
			if name == "healthy after a restart" {
				r.State = StateProgressing
			}
			in.Record, in.EverHealthy, in.Now = &r, true, at(41)
			res := Reduce(in)
			if res.Outcome != OutcomeApplied || len(res.Effects) != 0 || hasAudit(res, AuditRollbackCompleted, "R2") {
				t.Errorf("outcome %s effects %v audit %v: a release becomes healthy for the first time only once",
					res.Outcome, effectTypes(res), auditTypes(res))
			}
		})
	}
}

func TestCDEventKeysAreStablePerReleaseAndType(t *testing.T) {
	t.Parallel()
	r1 := record("R1", StateProgressing, 0)
	a := Reduce(Input{Fact: fact("R1", PhaseHealthy, 4), Record: &r1, Now: at(4)})
	b := Reduce(Input{Fact: fact("R1", PhaseHealthy, 9, step(4)), Record: &r1, Now: at(9)})
	if a.Effects[0].Key != b.Effects[0].Key || a.Effects[0].Key != "cdevent/"+CDEventServiceDeployed+"/R1" {
		t.Errorf("keys %q and %q: the idempotency key must depend on the release and type only", a.Effects[0].Key, b.Effects[0].Key)
	}
}

func countType(es []Effect, typ string) int {
	n := 0
	for _, e := range es {
		if e.Type == typ {
			n++
		}
	}
	return n
}
