package rolloutflow

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/rollout"
)

// ripcord_rollouts_unfinished counts the rollouts not done by status, and
// a database that does not answer leaves it out instead of failing the
// whole scrape.
func TestUnfinishedRolloutsGauge(t *testing.T) {
	t.Parallel()
	db := testdb.OpenMigrated(t, testdb.MigratedURL(t, "sqlite"))
	plan := twoStages(rollout.Stop)
	for i, st := range []struct {
		status Status
		phase  Phase
	}{{PausedQueue, PhaseQueue}, {PausedQueue, PhaseQueue}, {Running, PhaseBake}, {Succeeded, PhaseDone}} {
		m := NewMachine(plan)
		m.Status, m.Phase = st.status, st.phase
		storeRollout(t, db, "ro-"+string(rune('a'+i)), "checkout", time.Now(), plan, m)
	}
	reg := prometheus.NewRegistry()
	if err := registerUnfinished(reg, db.Read); err != nil {
		t.Fatal(err)
	}
	gauges := func() map[string]float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatalf("gather: %v", err)
		}
		out := map[string]float64{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				labels := ""
				for _, l := range m.GetLabel() {
					labels += l.GetName() + "=" + l.GetValue() + " "
				}
				out[labels] = m.GetGauge().GetValue()
			}
		}
		return out
	}
	got := gauges()
	if got["app=checkout environment=prod status=paused-queue "] != 2 || got["app=checkout environment=prod status=running "] != 1 || len(got) != 2 {
		t.Errorf("gauges %v, want 2 paused-queue and 1 running, nothing for the rollout that ended", got)
	}
	if err := db.Read.Close(); err != nil {
		t.Fatal(err)
	}
	if got := gauges(); len(got) != 0 {
		t.Errorf("gauges %v from a closed database", got)
	}
}
