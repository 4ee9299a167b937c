package app

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// A release rolled out in waves may get its first fact only when its
// rollout succeeds, hours after it opened (rolloutflow reports it then).
// Its stall check waits while the rollout runs, and gives a rollout that
// ended with no fact stall_after from its end.
func TestStallWaitsForTheReleasesRollout(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ts := startServer(t, dbURL, Options{})
		ctx := context.Background()
		now := time.Now().UTC()
		const id = "waves-r1"
		rec := records.Record{ReleaseID: id, App: "checkout", Environment: "prod", Repository: "acme/checkout",
			Image: imageV1, Kind: records.KindPromote}
		if err := ts.db.InTx(ctx, func(tx *sql.Tx) error {
			_, _, err := ts.records.OpenRelease(ctx, tx, rec, now.Add(-3*time.Hour))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := ts.db.Write.ExecContext(ctx, `INSERT INTO rollouts (id, release_id, repository, installation_id, app,
			environment, version, snapshot, machine, status, created_at, updated_at)
			VALUES ('ro-1', $1, 'acme/checkout', 1, 'checkout', 'prod', $2, '{}', '{}', 'running', $3, $3)`,
			id, imageV1, store.Micros(now.Add(-3*time.Hour))); err != nil {
			t.Fatal(err)
		}
		stalls := func() int {
			var n int
			if err := ts.db.Read.QueryRow(`SELECT COUNT(*) FROM audit_events WHERE type = 'stall_detected' AND release_id = $1`, id).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		check := func(status string, ended time.Time, want int) {
			t.Helper()
			if _, err := ts.db.Write.ExecContext(ctx, `UPDATE rollouts SET status = $1, updated_at = $2 WHERE id = 'ro-1'`,
				status, store.Micros(ended)); err != nil {
				t.Fatal(err)
			}
			if err := ts.checkStall(ctx, id, 15*time.Minute); err != nil {
				t.Fatal(err)
			}
			if got := stalls(); got != want {
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
	testdb.Each(t, func(t *testing.T, dbURL string) {
		gh := githubtest.NewServer(t)
		ts := startServerWith(t, dbURL, Options{}, func(c *configT) {
			c.GitHub = config.GitHub{AppID: githubtest.AppID, PrivateKey: githubtest.AppPrivateKey(t),
				WebhookSecrets: []string{testSecret}, APIURL: gh.URL()}
		})
		gh.PutFile("acme/checkout", "main", ".github/ripcord.yml", "version: 1\nstall_after: 5m\n")
		ctx := context.Background()
		installed := installationCommit(github.InstallationEvent{Action: github.String("created"),
			Installation: &github.Installation{ID: github.Int64(githubtest.InstallationID)},
			Repositories: []*github.Repository{{ID: github.Int64(11), FullName: github.String("acme/checkout")}}}, time.Now(), false)
		if err := ts.db.InTx(ctx, func(tx *sql.Tx) error { return installed(ctx, tx) }); err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		const id = "waves-r1"
		rec := records.Record{ReleaseID: id, App: "checkout", Environment: "prod", Repository: "acme/checkout",
			Image: imageV1, Kind: records.KindPromote}
		if err := ts.db.InTx(ctx, func(tx *sql.Tx) error {
			_, _, err := ts.records.OpenRelease(ctx, tx, rec, now.Add(-3*time.Hour))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := ts.db.Write.ExecContext(ctx, `INSERT INTO rollouts (id, release_id, repository, installation_id, app,
			environment, version, snapshot, machine, status, created_at, updated_at)
			VALUES ('ro-1', $1, 'acme/checkout', 1, 'checkout', 'prod', $2, '{}', '{}', 'paused-approval', $3, $3)`,
			id, imageV1, store.Micros(now.Add(-3*time.Hour))); err != nil {
			t.Fatal(err)
		}
		scan := &stallScanWorker{s: ts.Server}
		if err := scan.Work(ctx, &river.Job[StallScanArgs]{JobRow: &rivertype.JobRow{Kind: StallScanArgs{}.Kind()}}); err != nil {
			t.Fatal(err)
		}
		for _, r := range gh.Requests() {
			if strings.HasPrefix(r.Path, "/repos/acme/checkout/") {
				t.Errorf("the scan asked GitHub %s %s for a release whose rollout is under way", r.Method, r.Path)
			}
		}
		var n int
		if err := ts.db.Read.QueryRow(`SELECT COUNT(*) FROM audit_events WHERE type = 'stall_detected' AND release_id = $1`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%d stall alerts for a release whose rollout is under way, want none", n)
		}
	})
}
