package records

import (
	"context"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// A cluster source may report a release before its record is opened (the
// release tooling posts after the deploy started): that first fact is
// drift, as the seed says, since no record explains it. Sources are
// level-triggered, so once the record exists the next resync of the same
// state must reach it; it was dropped as a duplicate of the drift fact, and
// a release Healthy since before it was registered stayed opened for good
// (stalled, never eligible as a rollback target).
func TestResyncReachesARecordOpenedAfterItsFirstFact(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		early := applyFact(t, s, fact("R1", PhaseHealthy, 1), "d-1", at(1))
		if early.Outcome != OutcomeDrift {
			t.Fatalf("fact before the record: %s (%s), want drift", early.Outcome, early.Reason)
		}
		// Sent again before the record exists, it alerts no second time.
		if again := applyFact(t, s, fact("R1", PhaseHealthy, 2), "d-1b", at(2)); again.Outcome != OutcomeIgnored || len(again.Effects) != 0 {
			t.Errorf("resync before the record: %s (%s) with %d effects, want ignored without an alert", again.Outcome, again.Reason, len(again.Effects))
		}
		drift, err := s.Audit(context.Background(), AuditFilter{ReleaseID: "R1", Type: AuditDriftDetected, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(drift) != 1 {
			t.Errorf("%d drift_detected events for R1, want 1", len(drift))
		}
		openRelease(t, s, record("R1", "", 2))
		// The agent's resync: the same observation, later.
		res := applyFact(t, s, fact("R1", PhaseHealthy, 15), "d-2", at(15))
		if res.Outcome != OutcomeApplied {
			t.Fatalf("resync after the record was opened: %s (%s), want applied", res.Outcome, res.Reason)
		}
		got := mustGet(t, s, "R1")
		if got.State != StateHealthy || got.HealthyAt == nil || !got.HealthyAt.Equal(at(15)) {
			t.Errorf("R1 = %s, healthy_at %v; want healthy since %s", got.State, got.HealthyAt, at(15))
		}
		var sawChange bool
		events, err := s.Audit(context.Background(), AuditFilter{ReleaseID: "R1", Oldest: true, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			if e.Type == AuditStateChanged && e.Data["from"] == string(StateOpened) && e.Data["to"] == string(StateHealthy) {
				sawChange = true
			}
		}
		if !sawChange {
			t.Errorf("no state_changed opened -> healthy in R1's audit")
		}
		// A second resync is a duplicate now: the fact was applied.
		if again := applyFact(t, s, fact("R1", PhaseHealthy, 30), "d-3", at(30)); again.Outcome != OutcomeDuplicate {
			t.Errorf("second resync: %s (%s), want duplicate", again.Outcome, again.Reason)
		}
	})
}
