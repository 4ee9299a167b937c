package rolloutflow

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// With on_failure stop, a pass that fails while its sibling's batch still
// deploys fails the rollout at once, but the rollout ends, and lets the
// rollouts queued behind it go or holds them, only once that batch ended.
func TestAStoppedRolloutHoldsTheQueueUntilItsSiblingBatchEnds(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
		h.start(nil)
		first := h.id
		h.clock.set(h.clock.Now().Add(time.Second))
		behind := h.startRelease("r3:prod-eu/prod", strings.Repeat("b", 40))
		h.id = first
		h.run(func(r Rollout) bool { return r.Machine.Stage == 3 && r.Machine.Phase == PhaseDeploy })
		ds, err := listDispatched(ctx, h.x.deps.DB.Read, first)
		if err != nil {
			t.Fatal(err)
		}
		runOf := map[string]int64{}
		for _, d := range ds {
			runOf[d.Name] = d.RunID
		}
		const a, b = "deploy@resto/eu-2/eu-2a#0", "deploy@resto/us-1/us-1a#0"
		if runOf[a] == 0 || runOf[b] == 0 {
			t.Fatalf("dispatched %+v, want both passes of resto running", ds)
		}
		h.deliverRun(runOf[a], "failure")
		h.tick()

		r := h.rollout()
		if r.Machine.Phase != PhaseDrain || r.Machine.Status != Failed {
			t.Fatalf("rollout %s/%s while %s still deploys, want failed and waiting for it", r.Machine.Status, r.Machine.Phase, b)
		}
		audit, err := listAudit(ctx, h.x.deps.DB.Read, first)
		if err != nil {
			t.Fatal(err)
		}
		st := statusOf(r, ds, audit)
		if st.Rollout.Status != Failed || !strings.Contains(st.Rollout.Paused, "waits for the batches in flight to end: "+b) {
			t.Errorf("status %s paused %q, want failed, waiting for %s", st.Rollout.Status, st.Rollout.Paused, b)
		}
		if !strings.Contains(auditOfLines(audit), "waiting-batches: the rollout waits for the batches in flight to end: "+b) {
			t.Errorf("audit:\n%s\nwant a line saying it waits for %s", auditOfLines(audit), b)
		}
		if v := checkView(r, ds); !strings.Contains(v.output.GetTitle(), "waits for the batches in flight to end: "+b) {
			t.Errorf("check run title %q, want it to say what the rollout waits for", v.output.GetTitle())
		}
		if got, err := ahead(ctx, h.x.deps.DB.Read, behind); err != nil || !strings.Contains(got, first) {
			t.Errorf("ahead of the rollout behind: %q %v, want %s while its batch deploys", got, err, first)
		}
		if rb, _ := getRollout(ctx, h.x.deps.DB.Read, behind.ID); rb.Hold != "" {
			t.Errorf("the rollout behind is held (%q) before the one ahead ended", rb.Hold)
		}

		h.deliverRun(runOf[b], "success")
		h.tick()
		if r := h.rollout(); r.Machine.Phase != PhaseDone || r.Machine.Status != Failed || r.Machine.Paused != "" {
			t.Fatalf("rollout %s/%s paused %q once %s ended, want done, failed", r.Machine.Status, r.Machine.Phase, r.Machine.Paused, b)
		}
		if rb, _ := getRollout(ctx, h.x.deps.DB.Read, behind.ID); rb.Hold == "" {
			t.Errorf("the rollout behind is not held once the failed one ended")
		}
	})
}

func auditOfLines(ls []AuditLine) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.Type + ": " + l.Message + "\n")
	}
	return b.String()
}
