package app

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// A repository's own stall_after (docs/ripcord-yml.md) decides when its
// releases stall, not the server's: with the server at its 15m default, a
// repository that asks for 5m is alerted at 10 minutes, and one that asks
// for 1h is not alerted at 20.
func TestStallScanUsesEachRepositorysStallAfter(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts, gh := startStallServer(t, dbURL, "acme/quick", "acme/patient")
		if ts.cfg.StallAfter != 15*time.Minute {
			t.Fatalf("server stall_after %s, the test assumes the 15m default", ts.cfg.StallAfter)
		}
		gh.PutFile("acme/quick", "main", ".github/ripcord.yml", "version: 1\nstall_after: 5m\n")
		gh.PutFile("acme/patient", "main", ".github/ripcord.yml", "version: 1\nstall_after: 1h\n")
		ctx := context.Background()
		now := time.Now()
		for _, r := range []struct {
			id, repo string
			age      time.Duration
		}{{"quick-r1", "acme/quick", 10 * time.Minute}, {"patient-r1", "acme/patient", 20 * time.Minute}} {
			rec := records.Record{ReleaseID: r.id, App: "checkout", Environment: "prod", Cluster: "prod-eu",
				Repository: r.repo, Image: imageV1, Kind: records.KindPromote}
			if err := ts.db.InTx(ctx, func(tx *sql.Tx) error {
				_, _, err := ts.records.OpenRelease(ctx, tx, rec, now.Add(-r.age))
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		scanStalls(t, ts)
		var stall struct{ Events []map[string]any }
		ts.api(t, "/api/v1/audit?type=stall_detected", &stall)
		var got []any
		for _, e := range stall.Events {
			got = append(got, e["release_id"])
		}
		if len(got) != 1 || got[0] != "quick-r1" {
			t.Errorf("stalled releases %v, want only quick-r1 (acme/quick's stall_after 5m; acme/patient's is 1h)", got)
		}
	})
}

// startStallServer starts ripcord on a fake GitHub where the App's
// installation has repositories, recorded as an installation event does.
func startStallServer(t *testing.T, dbURL string, repositories ...string) (*testServer, *githubtest.Server) {
	t.Helper()
	gh := githubtest.NewServer(t)
	ts := startServerWith(t, dbURL, Options{}, func(c *configT) {
		c.GitHub = config.GitHub{AppID: githubtest.AppID, PrivateKey: githubtest.AppPrivateKey(t),
			WebhookSecrets: []string{testSecret}, APIURL: gh.URL()}
	})
	var repos []*github.Repository
	for i, r := range repositories {
		repos = append(repos, &github.Repository{ID: github.Int64(int64(11 + i)), FullName: github.String(r)})
	}
	ctx := context.Background()
	installed := installationCommit(github.InstallationEvent{Action: github.String("created"),
		Installation: &github.Installation{ID: github.Int64(githubtest.InstallationID)}, Repositories: repos}, time.Now(), false)
	if err := ts.db.InTx(ctx, func(tx *sql.Tx) error { return installed(ctx, tx) }); err != nil {
		t.Fatal(err)
	}
	return ts, gh
}

// scanStalls runs one stall scan, as its periodic job does.
func scanStalls(t *testing.T, ts *testServer) {
	t.Helper()
	scan := &stallScanWorker{s: ts.Server}
	if err := scan.Work(context.Background(), &river.Job[StallScanArgs]{JobRow: &rivertype.JobRow{Kind: StallScanArgs{}.Kind()}}); err != nil {
		t.Fatal(err)
	}
}
