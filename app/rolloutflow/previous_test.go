package rolloutflow

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// markHealthy sets the release's healthy_at, as the first healthy fact of
// its deploy does.
func (h *harness) markHealthy(releaseID string) {
	h.t.Helper()
	_, err := h.x.deps.DB.Write.ExecContext(context.Background(), `UPDATE records SET healthy_at = $1 WHERE release_id = $2`,
		store.Micros(h.clock.Now()), releaseID)
	if err != nil {
		h.t.Fatal(err)
	}
}

// A rollout that waited in the queue rolls back to the release healthy when
// it left the queue: the rollout ahead of it may have deployed a newer one
// meanwhile, and going back past it would undo it on part of the hosts.
func TestAQueuedRolloutRollsBackToTheReleaseBeforeItWhenItStarts(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		h := newHarnessOn(t, dbURL, "rollback-wave", "", time.Minute)
		h.markHealthy("r1:prod-eu/prod")
		h.start(nil) // v2
		v2 := h.id
		h.clock.set(h.clock.Now().Add(time.Second))
		v3 := h.startRelease("r3:prod-eu/prod", strings.Repeat("b", 40))
		if v3.Machine.Status != PausedQueue {
			t.Fatalf("v3's rollout is %s, want queued behind v2's", v3.Machine.Status)
		}

		h.id = v2
		if r := h.run(nil); r.Machine.Status != Succeeded {
			t.Fatalf("v2's rollout %s: %s", r.Machine.Status, r.Machine.Failure)
		}
		h.markHealthy("r2:prod-eu/prod") // its hosts report healthy

		h.id = v3.ID
		h.failAt["deploy@eu-1/eu-1/eu-1a#0"] = true // v3 fails in its second wave
		r := h.run(nil)
		if r.Machine.Status != Failed || r.Machine.Rollback == nil || r.Machine.Rollback.Outcome != "succeeded" {
			t.Fatalf("v3's rollout %s, rollback %+v; want failed and rolled back", r.Machine.Status, r.Machine.Rollback)
		}
		if r.Previous != "v2" {
			t.Errorf("v3's rollout rolls back to %q, want v2 (healthy when it left the queue)", r.Previous)
		}
		got := h.dispatches()
		if last := got[len(got)-1]; last != "rollback@eu-1/eu-1/eu-1a#0 v2" {
			t.Errorf("dispatches:\n%s\nwant the failed batch rolled back to v2", strings.Join(got, "\n"))
		}
		if slices.Contains(got, "rollback@eu-1/eu-1/eu-1a#0 v1") {
			t.Errorf("v3's rollback went back to v1, undoing v2 on part of the hosts")
		}
	})
}
