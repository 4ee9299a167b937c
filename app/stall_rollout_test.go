package app

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// A release rolled out in waves may get its first fact only when its
// rollout succeeds, hours after it opened (rolloutflow reports it then).
// Its stall check waits while the rollout runs, and gives a rollout that
// ended with no fact stall_after from its end.
func TestStallWaitsForTheReleasesRollout(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServer(t, dbURL, Options{})
		ctx := context.Background()
		now := time.Now().UTC()
		const id = "waves-r1"
		openRolledOut(t, ts, id, "running", now.Add(-3*time.Hour))
		check := func(status string, ended time.Time, want int) {
			t.Helper()
			if _, err := ts.db.Write.ExecContext(ctx, `UPDATE rollouts SET status = $1, updated_at = $2 WHERE id = 'ro-1'`,
				status, store.Micros(ended)); err != nil {
				t.Fatal(err)
			}
			if err := ts.checkStall(ctx, id, 15*time.Minute); err != nil {
				t.Fatal(err)
			}
			if got := stallAlerts(t, ts, id); got != want {
				t.Errorf("rollout %s, ended %s ago: %d stall alerts, want %d", status, now.Sub(ended).Round(time.Minute), got, want)
			}
		}
		check("running", now.Add(-time.Minute), 0)   // three hours open, rollout still running
		check("failed", now.Add(-5*time.Minute), 0)  // ended 5m ago: stall_after from its end
		check("failed", now.Add(-20*time.Minute), 1) // ended 20m ago with no fact
	})
}

// The stall scan asks GitHub nothing for a release whose rollout is under
// way: the release waits for its rollout whatever its repository's
// stall_after says, so the scan does not read the file, every minute of a
// rollout hours long (nor, for a paused rollout, after the App was
// uninstalled from the repository meanwhile).
func TestStallScanReadsNoConfigForAReleaseBeingRolledOut(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts, gh := startStallServer(t, dbURL, "acme/checkout")
		gh.PutFile("acme/checkout", "main", ".github/ripcord.yml", "version: 1\nstall_after: 5m\n")
		const id = "waves-r1"
		openRolledOut(t, ts, id, "paused-approval", time.Now().Add(-3*time.Hour))
		scanStalls(t, ts)
		for _, r := range gh.Requests() {
			if strings.HasPrefix(r.Path, "/repos/acme/checkout/") {
				t.Errorf("the scan asked GitHub %s %s for a release whose rollout is under way", r.Method, r.Path)
			}
		}
		if n := stallAlerts(t, ts, id); n != 0 {
			t.Errorf("%d stall alerts for a release whose rollout is under way, want none", n)
		}
	})
}

// openRolledOut opens release id of acme/checkout at opened, with its
// rollout ro-1 in status since then.
func openRolledOut(t *testing.T, ts *testServer, id, status string, opened time.Time) {
	t.Helper()
	ctx := context.Background()
	rec := records.Record{ReleaseID: id, App: "checkout", Environment: "prod", Repository: "acme/checkout",
		Image: imageV1, Kind: records.KindPromote}
	if err := ts.db.InTx(ctx, func(tx *sql.Tx) error {
		_, _, err := ts.records.OpenRelease(ctx, tx, rec, opened)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.db.Write.ExecContext(ctx, `INSERT INTO rollouts (id, release_id, repository, installation_id, app,
		environment, version, snapshot, machine, status, created_at, updated_at)
		VALUES ('ro-1', $1, 'acme/checkout', 1, 'checkout', 'prod', $2, '{}', '{}', $3, $4, $4)`,
		id, imageV1, status, store.Micros(opened)); err != nil {
		t.Fatal(err)
	}
}

// stallAlerts counts the stall alerts of release id.
func stallAlerts(t *testing.T, ts *testServer, id string) int {
	t.Helper()
	var n int
	if err := ts.db.Read.QueryRow(`SELECT COUNT(*) FROM audit_events WHERE type = 'stall_detected' AND release_id = $1`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
