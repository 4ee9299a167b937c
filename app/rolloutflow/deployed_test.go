package rolloutflow

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// Deployed names the releases whose rollout put them on hosts, however
// their records stand: r2's rollout succeeded with no fact about r2, and r3's
// waits in the queue behind it, having deployed nothing.
func TestDeployedNamesReleasesTheirRolloutDeployed(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
		h.start(nil)
		v2 := h.id
		h.clock.set(h.clock.Now().Add(time.Second))
		if v3 := h.startRelease("r3:prod-eu/prod", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"); v3.Machine.Status != PausedQueue {
			t.Fatalf("r3's rollout is %s, want queued", v3.Machine.Status)
		}
		h.id = v2
		if r := h.run(nil); r.Machine.Status != Succeeded {
			t.Fatalf("r2's rollout %s: %s", r.Machine.Status, r.Machine.Failure)
		}
		got, err := Deployed(context.Background(), h.x.deps.DB.Read,
			[]string{"r1:prod-eu/prod", "r2:prod-eu/prod", "r3:prod-eu/prod", "nope"})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]Status{"r2:prod-eu/prod": Succeeded}; !maps.Equal(got, want) {
			t.Errorf("Deployed = %v, want %v", got, want)
		}
	})
}
