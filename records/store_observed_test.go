package records

import (
	"context"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

func TestObservedIsWhatTheWorkloadsReportNow(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		openRelease(t, s, record("R1", "", 0))
		openRelease(t, s, record("R2", "", 10))
		applyFact(t, s, fact("R1", PhaseHealthy, 5, step(4)), "", at(5))
		got, err := s.Observed(context.Background(), []string{"R1", "R2"})
		if err != nil || len(got) != 1 || got[0].ReleaseID != "R1" || got[0].Images[0] != imageOf("R1") {
			t.Fatalf("observed %+v (%v), want the checkout workload running R1", got, err)
		}
		// R2 reaches the workload: R1 runs nowhere any more.
		applyFact(t, s, fact("R2", PhaseProgressing, 11, gen(3)), "", at(11))
		got, err = s.Observed(context.Background(), []string{"R1"})
		if err != nil || len(got) != 0 {
			t.Errorf("observed %+v (%v), want nothing running R1", got, err)
		}
		if got, err := s.Observed(context.Background(), nil); err != nil || got != nil {
			t.Errorf("no ids: %+v %v", got, err)
		}
	})
}

// The agent reports a deleted workload (phase Deleted): its last report
// must not go on claiming that its release runs. A fact observed before the
// deletion, arriving late, does not bring it back; a new workload of the
// same name (another uid) does.
func TestObservedForgetsADeletedWorkload(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		openRelease(t, s, record("R1", "", 0))
		applyFact(t, s, fact("R1", PhaseHealthy, 5, step(4)), "", at(5))
		deleted := fact("R1", Phase("Deleted"), 20)
		if err := deleted.Validate(); err != nil {
			t.Fatalf("a deletion fact is refused: %v", err)
		}
		applyFacts(t, s, []BatchFact{{Fact: deleted, Now: at(20)}}) // the batch path where the database has one
		if got, err := s.Observed(context.Background(), []string{"R1"}); err != nil || len(got) != 0 {
			t.Fatalf("observed %+v (%v) after the workload was deleted, want nothing running R1", got, err)
		}
		applyFact(t, s, fact("R1", PhaseHealthy, 10, step(3)), "", at(21)) // observed before the deletion
		if got, err := s.Observed(context.Background(), []string{"R1"}); err != nil || len(got) != 0 {
			t.Fatalf("observed %+v (%v) after a late fact, want nothing running R1", got, err)
		}
		applyFact(t, s, fact("R1", PhaseHealthy, 30, step(4), func(f *Fact) { f.UID = "recreated-uid" }), "", at(30))
		if got, err := s.Observed(context.Background(), []string{"R1"}); err != nil || len(got) != 1 || got[0].UID != "recreated-uid" {
			t.Errorf("observed %+v (%v), want the recreated workload running R1", got, err)
		}
	})
}
