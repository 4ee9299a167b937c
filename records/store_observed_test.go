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
