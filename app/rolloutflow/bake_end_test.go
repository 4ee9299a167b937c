package rolloutflow

import (
	"strings"
	"testing"
	"time"
)

// A reading taken late, after the server stood still past the bake's end,
// is one look at the stage: when it is red it is read again an interval
// later, as seed 001 reads every interval, not at once. Read again at the
// same moment, failures_to_stop would count one look as two readings and
// fail the stage on a red seen before the stop.
func TestALateReadingAfterTheBakeIsReadAgainAnIntervalLater(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "", 2*time.Minute) // four readings, 30s apart
	h.gh.PutFile(testRepo, "main", ".github/ripcord.yml",
		strings.Replace(mustFile(h), "failures_to_stop: 2", "failures_to_stop: 3", 1))
	h.start(nil)
	h.prom.set("eu-1a", 0.5) // the canary's AZ is red
	r := h.run(func(r Rollout) bool { return r.Machine.Phase == PhaseBake && r.Machine.Bake.Reads == 1 })
	if r.Machine.Stage != 0 || r.Machine.Bake.Red != 1 {
		t.Fatalf("stage %d with %d red readings, want the canary's bake after its first (red) reading", r.Machine.Stage, r.Machine.Bake.Red)
	}

	late := r.Machine.Bake.From.Add(10 * time.Minute) // long past the bake's end
	h.clock.set(late)
	queries := h.prom.count("eu-1a")
	h.tickAs(true)
	r = h.rollout()
	if got := h.prom.count("eu-1a") - queries; got != 1 || r.Machine.Bake.Reads != 4 || r.Machine.Bake.Red != 2 {
		t.Errorf("after the stop: %d readings taken, reading %d with %d red in a row; want one reading, the bake's last (4), 2 red",
			got, r.Machine.Bake.Reads, r.Machine.Bake.Red)
	}
	if r.Machine.Status != Running || !r.WakeAt.Equal(late.Add(30*time.Second)) {
		t.Fatalf("after the stop: status %s, waking at %s; want running, read again an interval later (%s)",
			r.Machine.Status, r.WakeAt.Format(time.TimeOnly), late.Add(30*time.Second).Format(time.TimeOnly))
	}

	h.clock.set(r.WakeAt)
	h.tickAs(true)
	if r = h.rollout(); r.Machine.Status != Failed || r.Machine.Bake.Red != 3 {
		t.Errorf("status %s with %d red in a row, want failed on the third red reading", r.Machine.Status, r.Machine.Bake.Red)
	}
}
