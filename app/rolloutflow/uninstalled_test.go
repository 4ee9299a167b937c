package rolloutflow

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A rollout the uninstall did not end (stored by a start that read the
// installation before the uninstall and committed after it) ends at its
// next tick, before any GitHub call: baking at its canary's gate, with
// on_failure rollback-all, it fails with the reason and rolls nothing
// back; its check run job and later ticks ask GitHub nothing either.
func TestATickEndsARolloutOfAnUninstalledRepositoryWithoutGitHub(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h, r := bakingCanary(t, dbURL, "rollback-all")
		ctx := context.Background()
		if _, err := h.x.deps.DB.Write.ExecContext(ctx, `DELETE FROM installation_repositories WHERE installation_id = $1 AND repository = $2`,
			githubtest.InstallationID, testRepo); err != nil {
			t.Fatal(err)
		}
		calls := len(h.gh.Requests())

		h.clock.set(r.WakeAt)
		h.tickAs(true)
		r = h.rollout()
		why := "the App was uninstalled from " + testRepo
		if r.Machine.Status != Failed || r.Machine.Phase != PhaseDone || r.Machine.Failure != why || r.Machine.Rollback != nil {
			t.Errorf("after the tick: %s/%s, failure %q, rollback %+v; want failed and done, %q, no rollback",
				r.Machine.Status, r.Machine.Phase, r.Machine.Failure, r.Machine.Rollback, why)
		}
		if st := r.Machine.Stages[0]; st.State != StageFailed {
			t.Errorf("the canary's stage is %s, want failed", st.State)
		}
		if failed := h.auditOf("failed"); len(failed) != 1 || !strings.Contains(failed[0], why) {
			t.Errorf("audit of the end %q, want one line saying %q", failed, why)
		}
		if !r.WakeAt.IsZero() {
			t.Errorf("next tick at %v, want none", r.WakeAt)
		}

		w, job := checkJob(h)
		if err := w.Work(ctx, job); err != nil {
			t.Errorf("check run job: %v, want it dropped", err)
		}
		h.clock.set(h.clock.Now().Add(time.Hour))
		h.tickAs(true)
		if got := h.gh.Requests()[calls:]; len(got) != 0 {
			for _, c := range got {
				t.Errorf("GitHub asked after the uninstall: %s %s", c.Method, c.Path)
			}
		}
		if failed := h.auditOf("failed"); len(failed) != 1 {
			t.Errorf("audit of the end %q after another tick, want it said once", failed)
		}
	})
}

// A rollout that had failed already, rolling back, ends there: its
// rollback failed for the same reason, with no more dispatches.
func TestAnUninstallEndsARollbackUnderWay(t *testing.T) {
	t.Parallel()
	m := Machine{Status: Failed, Phase: PhaseRollback, Stages: []StageState{{State: StageFailed}},
		Rollback: &Rollback{Queue: []Ref{{Kind: KindRollback}}, Outcome: "running"}}
	evs := m.uninstalled(testRepo)
	why := "the App was uninstalled from " + testRepo
	if m.Phase != PhaseDone || m.Rollback.Outcome != "failed" || m.Rollback.Reason != why || len(evs) != 2 {
		t.Errorf("phase %s, rollback %+v, events %+v: want done, the rollback failed because %s", m.Phase, m.Rollback, evs, why)
	}
	if evs := m.uninstalled(testRepo); evs != nil {
		t.Errorf("ended again: %+v, want nothing", evs)
	}
}

// bakingCanary runs a rollout with onFailure until its canary bakes at
// its gate, its next reading scheduled.
func bakingCanary(t *testing.T, dbURL, onFailure string) (*harness, Rollout) {
	t.Helper()
	h := newHarnessOn(t, dbURL, onFailure, "", 10*time.Minute)
	h.start(nil)
	r := h.run(func(r Rollout) bool { return r.Machine.Phase == PhaseBake })
	if r.Machine.Phase != PhaseBake || r.WakeAt.IsZero() {
		t.Fatalf("phase %s, wake %v: want the canary baking, with its next reading scheduled", r.Machine.Phase, r.WakeAt)
	}
	return h, r
}
