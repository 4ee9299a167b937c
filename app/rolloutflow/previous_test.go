package rolloutflow

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/repoconfig"
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
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
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

// ran applies a task fact of status to release id (image version): the
// release ran, and reached healthy when status is success.
func (h *harness) ran(id, version string, runID int64, status records.TaskStatus) {
	h.t.Helper()
	ctx := context.Background()
	f := records.Fact{Source: records.SourceTask, Repository: testRepo, WorkflowRunID: runID, RunAttempt: 1,
		Status: status, App: "checkout", Environment: "prod", Cluster: "prod-eu", ReleaseID: id,
		Images: []string{version}, ObservedAt: h.clock.Now()}
	if status == records.TaskFailed {
		f.FailureType = "deployment_failure"
	}
	err := h.x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		_, err := h.x.deps.Records.ApplyFact(ctx, tx, f, fmt.Sprintf("delivery-%d", runID), h.clock.Now())
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	if rec, err := h.x.deps.Records.Get(ctx, id); err != nil || !rec.Ran() || (rec.HealthyAt != nil) != (status == records.TaskSuccess) {
		h.t.Fatalf("release %s after its %s fact: %+v, %v", id, status, rec, err)
	}
}

// openMany opens n releases that never run, each a second newer.
func (h *harness) openMany(n int) {
	h.t.Helper()
	for i := range n {
		h.clock.set(h.clock.Now().Add(time.Second))
		h.open(fmt.Sprintf("pending-%02d:prod-eu/prod", i), fmt.Sprintf("never-ran-%02d", i))
	}
}

// previousOf is the version the rollout of release id would go back to.
func (h *harness) previousOf(id string) string {
	h.t.Helper()
	ctx := context.Background()
	rec, err := h.x.deps.Records.Get(ctx, id)
	if err != nil {
		h.t.Fatal(err)
	}
	got, err := h.x.previous(ctx, rec)
	if err != nil {
		h.t.Fatal(err)
	}
	return got
}

// The version a failed rollout goes back to is one that ran: releases
// whose pull request is not merged (opened) never did, so any number of
// them newer than the healthy release do not hide it.
func TestPreviousIsTheHealthyReleaseThatRanPastOpenedOnes(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := newHarnessOn(t, dbURL, "rollback-wave", "", time.Minute)
		// r1 ran and was healthy (newHarnessOn).
		h.openMany(21)
		if got := h.previousOf("r2:prod-eu/prod"); got != "v1" {
			t.Errorf("previous of r2 with 21 opened releases newer than r1: %q, want v1 (r1 ran and was healthy)", got)
		}
	})
}

// With no release that was healthy, the fallback is the newest other
// release that ran, never an opened (or withdrawn) one: that image was
// never deployed.
func TestPreviousFallbackIsAReleaseThatRan(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := newHarnessOn(t, dbURL, "rollback-wave", "", time.Minute)
		// r1 (healthy) is the release itself here; r2 ran and failed.
		h.ran("r2:prod-eu/prod", "v2", 9002, records.TaskFailed)
		h.openMany(1)
		if got := h.previousOf("r1:prod-eu/prod"); got != "v2" {
			t.Errorf("previous of r1 with an opened release newer than r2: %q, want v2 (the newest other release that ran)", got)
		}
	})
}

// The rollout of a rollback release that fails never goes back to the
// release it rolls back: the rule "newest other release healthy once"
// would pick r2, the very release rb takes back, and dispatch it again on
// the failed wave. With nothing else the fleet is known to have run in
// its place (r1's image is the rollback's own, which just failed), the
// rollout stops where it is, failed, and says why.
func TestAFailedRollbackRolloutDoesNotRedeployTheReleaseItRollsBack(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := newHarnessOn(t, dbURL, "rollback-wave", "", time.Minute)
		ctx := context.Background()
		h.clock.set(h.clock.Now().Add(time.Minute))
		h.ran("r2:prod-eu/prod", "v2", 9002, records.TaskSuccess) // r2 was healthy once, then went bad
		h.clock.set(h.clock.Now().Add(time.Minute))
		rb := records.Record{ReleaseID: "rb:prod-eu/prod", App: "checkout", Environment: "prod", Cluster: "prod-eu",
			Repository: testRepo, Image: "v1", Kind: records.KindRollback, RollbackOf: "r2:prod-eu/prod", RollbackReason: "error rate",
			GitRevision: strings.Repeat("c", 40)}
		if err := h.x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
			_, _, err := h.x.deps.Records.OpenRelease(ctx, tx, rb, h.clock.Now())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		cfg, problems := repoconfig.Load([]byte(mustFile(h)))
		if len(problems) > 0 {
			t.Fatalf("config: %v", problems)
		}
		env, _ := cfg.Environment("checkout", "prod")
		rec, err := h.x.deps.Records.Get(ctx, rb.ReleaseID)
		if err != nil {
			t.Fatal(err)
		}
		r, err := h.x.create(ctx, rec, githubtest.InstallationID, Snapshot{Plan: env.Plan, Settings: SettingsFor(env.Plan, "main")}, "bob")
		if err != nil {
			t.Fatal(err)
		}
		h.id = r.ID
		h.failAt["deploy@eu-1/eu-1/eu-1a#0"] = true // the rollback fails in its second wave
		r = h.run(nil)
		if r.Previous == "v2" {
			t.Errorf("the rollback's rollout goes back to v2, the release it rolls back")
		}
		for _, d := range h.dispatches() {
			if strings.HasSuffix(d, " v2") {
				t.Errorf("dispatched %q: the release being rolled back deployed again\n%s", d, strings.Join(h.dispatches(), "\n"))
			}
		}
		if r.Machine.Status != Failed || r.Machine.Rollback == nil || r.Machine.Rollback.Outcome != "failed" ||
			!strings.Contains(r.Machine.Rollback.Reason, "r2:prod-eu/prod") {
			t.Errorf("rollout %s, rollback %+v; want failed, its rollback failed naming r2, the release it rolls back",
				r.Machine.Status, r.Machine.Rollback)
		}
	})
}

// openRollback opens rollback release id of rollbackOf, going back to
// version.
func (h *harness) openRollback(id, rollbackOf, version string) records.Record {
	h.t.Helper()
	ctx := context.Background()
	rb := records.Record{ReleaseID: id, App: "checkout", Environment: "prod", Cluster: "prod-eu",
		Repository: testRepo, Image: version, Kind: records.KindRollback, RollbackOf: rollbackOf, RollbackReason: "error rate",
		GitRevision: strings.Repeat("c", 40)}
	if err := h.x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		_, _, err := h.x.deps.Records.OpenRelease(ctx, tx, rb, h.clock.Now())
		return err
	}); err != nil {
		h.t.Fatal(err)
	}
	rec, err := h.x.deps.Records.Get(ctx, id)
	if err != nil {
		h.t.Fatal(err)
	}
	return rec
}

// A release that was rolled back is never the version a failed rollout
// goes back to, though it was healthy once: whoever rolled it back found
// it bad. That holds whether records say so (rolled-back) or only a
// rollback release that ran names it (its rollout deployed it and no fact
// came, or it ran and failed, so the release it takes back stays healthy).
// The newest release that ran and was not rolled back is chosen instead.
func TestPreviousIsNeverARolledBackRelease(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// rollBack rolls r3 (v3, healthy) back to v1.
		rollBack func(h *harness)
	}{
		{"rollback deployed by its own rollout, no fact", func(h *harness) {
			ctx := context.Background()
			rb := h.openRollback("rb:prod-eu/prod", "r3:prod-eu/prod", "v1")
			cfg, problems := repoconfig.Load([]byte(mustFile(h)))
			if len(problems) > 0 {
				h.t.Fatalf("config: %v", problems)
			}
			env, _ := cfg.Environment("checkout", "prod")
			r, err := h.x.create(ctx, rb, githubtest.InstallationID, Snapshot{Plan: env.Plan, Settings: SettingsFor(env.Plan, "main")}, "bob")
			if err != nil {
				h.t.Fatal(err)
			}
			h.id = r.ID
			if r := h.run(nil); r.Machine.Status != Succeeded {
				h.t.Fatalf("the rollback's rollout %s: %s", r.Machine.Status, r.Machine.Failure)
			}
		}},
		{"rollback that ran and failed", func(h *harness) {
			h.openRollback("rb:prod-eu/prod", "r3:prod-eu/prod", "v1")
			h.ran("rb:prod-eu/prod", "v1", 9004, records.TaskFailed)
		}},
		{"records say rolled-back, the rollback is not read", func(h *harness) {
			if _, err := h.x.deps.DB.Write.ExecContext(context.Background(),
				`UPDATE records SET state = $1, rolled_back_by = $2 WHERE release_id = $3`,
				string(records.StateRolledBack), "rb:prod-eu/elsewhere", "r3:prod-eu/prod"); err != nil {
				h.t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				h := newHarnessOn(t, dbURL, "rollback-wave", "", time.Minute)
				// r1 (v1) ran and was healthy (newHarnessOn); r3 after it too.
				h.clock.set(h.clock.Now().Add(time.Minute))
				h.open("r3:prod-eu/prod", "v3")
				h.ran("r3:prod-eu/prod", "v3", 9003, records.TaskSuccess)
				h.clock.set(h.clock.Now().Add(time.Minute))
				c.rollBack(h)
				if got := h.previousOf("r2:prod-eu/prod"); got != "v1" {
					t.Errorf("previous of r2 after r3 was rolled back: %q, want v1 (r1, the newest healthy release not rolled back)", got)
				}
			})
		})
	}
}

// With no healthy release left but one that was rolled back, the fallback
// (the newest other release that ran) is not the rolled-back one either.
func TestPreviousFallbackIsNeverARolledBackRelease(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := newHarnessOn(t, dbURL, "rollback-wave", "", time.Minute)
		// r1 (healthy) is the release itself here; r3 and then r4 ran and
		// failed, and r4 was rolled back (its rollback is not read).
		h.clock.set(h.clock.Now().Add(time.Minute))
		h.open("r3:prod-eu/prod", "v3")
		h.ran("r3:prod-eu/prod", "v3", 9003, records.TaskFailed)
		h.clock.set(h.clock.Now().Add(time.Minute))
		h.open("r4:prod-eu/prod", "v4")
		h.ran("r4:prod-eu/prod", "v4", 9004, records.TaskFailed)
		if _, err := h.x.deps.DB.Write.ExecContext(context.Background(),
			`UPDATE records SET state = $1, rolled_back_by = $2 WHERE release_id = $3`,
			string(records.StateRolledBack), "rb:prod-eu/elsewhere", "r4:prod-eu/prod"); err != nil {
			t.Fatal(err)
		}
		if got := h.previousOf("r1:prod-eu/prod"); got != "v3" {
			t.Errorf("previous of r1: %q, want v3 (r3: the newest other release that ran and was not rolled back)", got)
		}
	})
}
