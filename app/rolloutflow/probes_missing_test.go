package rolloutflow

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/rollout"
)

// A probe workflow GitHub answers 404 for while the repository reads is
// missing: the round is red at once (failures_to_stop is 1 here: the
// stage fails), and the gate and the audit say which workflow to look
// for where, as a batch's dispatch does, not GitHub's raw answer.
func TestAProbeDispatch404OfAMissingWorkflowSaysSo(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := bakingRunners(t, dbURL)
		answerRoute(h, "POST "+dispatchRoute).set(http.StatusNotFound)
		h.clock.set(h.rollout().WakeAt) // the first reading is due
		h.tickAs(true)
		want := "workflow " + rollout.DefaultProbeWorkflow + " not found in " + testRepo +
			": GitHub answers 404 on its dispatch, and the repository reads (is .github/workflows/" +
			rollout.DefaultProbeWorkflow + " on its default branch?)"
		r := h.rollout()
		if r.Machine.Status != Failed || !strings.Contains(r.Machine.Stages[0].Gate, "not dispatched: "+want) {
			t.Errorf("status %s, gate %q; want failed at once, the gate saying %q", r.Machine.Status, r.Machine.Stages[0].Gate, want)
		}
		var said bool
		for _, l := range h.auditOf("dispatch") {
			said = said || l == "probe workflow of reading 0.0.-1.1 not dispatched: "+want
		}
		if !said {
			t.Errorf("dispatch audit lines %q, want the probe round's saying %q", h.auditOf("dispatch"), want)
		}
		if lost := h.auditOf("access-lost"); len(lost) != 0 {
			t.Errorf("access-lost audit lines %q for a repository that reads", lost)
		}
	})
}
