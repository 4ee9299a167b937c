package rolloutflow

import (
	"context"
	"errors"
	"testing"

	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// While its installation is suspended, a rollout baking at its canary's
// gate neither ticks nor writes its check run: both jobs snooze (no
// attempt spent) before any GitHub call, and the rollout is as it was.
// Once the installation is active again its tick goes on.
func TestJobsOfASuspendedInstallationSnoozeBeforeGitHub(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h, r := bakingCanary(t, dbURL, "stop")
		ctx := context.Background()
		suspend := func(v bool) {
			t.Helper()
			if _, err := h.x.deps.DB.Write.ExecContext(ctx, `UPDATE installations SET suspended = $1 WHERE id = $2`,
				v, githubtest.InstallationID); err != nil {
				t.Fatal(err)
			}
		}
		suspend(true)
		calls := len(h.gh.Requests())
		h.clock.set(r.WakeAt)

		var snooze *rivertype.JobSnoozeError
		if err := h.x.Tick(ctx, h.id, true); !errors.As(err, &snooze) {
			t.Errorf("tick while suspended: %v, want a snooze", err)
		}
		w, job := checkJob(h)
		if err := w.Work(ctx, job); !errors.As(err, &snooze) {
			t.Errorf("check run job while suspended: %v, want a snooze", err)
		}
		for _, c := range h.gh.Requests()[calls:] {
			t.Errorf("GitHub asked while suspended: %s %s", c.Method, c.Path)
		}
		if got := h.rollout(); got.Seq != r.Seq || got.Machine.Phase != PhaseBake {
			t.Errorf("the rollout moved while suspended: phase %s, seq %d (was %d)", got.Machine.Phase, got.Seq, r.Seq)
		}

		suspend(false)
		if err := h.x.Tick(ctx, h.id, true); err != nil {
			t.Fatalf("tick once unsuspended: %v", err)
		}
		if got := h.rollout(); got.Seq == r.Seq {
			t.Errorf("the tick once unsuspended did not move the rollout (phase %s)", got.Machine.Phase)
		}
	})
}
