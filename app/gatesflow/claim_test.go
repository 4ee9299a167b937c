package gatesflow

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// Two evaluations of one gate on one commit report at once: the older
// one has looked for newer runs and found none, and GitHub has not yet
// answered its creation when the newer one reports. The gate's result on
// the commit is its newest run, so the newer verdict's run must be created
// after the older's: the newer waits while the older creates, then
// creates its own. Created in the other order, the older verdict (a
// failure the newer evaluation no longer finds) would stand.
func TestAnOlderVerdictIsNotCreatedAfterANewerOne(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		db := testdb.OpenMigrated(t, dbURL)
		rc := testdb.InsertOnlyRiver(t, db)
		s := githubtest.NewServer(t)
		cc, err := ghclient.New(ghclient.Config{AppID: githubtest.AppID, PrivateKey: githubtest.AppPrivateKey(t), APIURL: s.URL()})
		if err != nil {
			t.Fatal(err)
		}
		w := &reportWorker{deps: pipeline.Deps{DB: db, GitHub: cc, River: func() *river.Client[*sql.Tx] { return rc }, Now: time.Now,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			App: func() pipeline.AppIdentity { return pipeline.AppIdentity{Configured: true, ID: githubtest.AppID} }}}
		const repo, head = "acme/checkout", "19c382f4dd64bc65b314550afc304816918bbb0a"
		ctx := context.Background()
		verdict := func(conclusion, title string) *river.Job[ReportArgs] {
			t.Helper()
			a := ReportArgs{Repository: repo, HeadSHA: head, InstallationID: githubtest.InstallationID, App: "checkout", Environment: "prod",
				Name: "ripcord/qa", Status: "completed", Conclusion: conclusion, Title: title, Summary: title}
			row, err := rc.Insert(ctx, a, nil) // queued, as River keeps a live job
			if err != nil {
				t.Fatal(err)
			}
			a.Seq = row.Job.ID
			a.ExternalID = evaluationKey(repo, 1, head, "checkout", "prod", "pull_request labeled", a.Seq)
			return &river.Job[ReportArgs]{JobRow: &rivertype.JobRow{ID: row.Job.ID, Attempt: 1, MaxAttempts: reportAttempts + 1}, Args: a}
		}
		older, newer := verdict("failure", "QA not approved"), verdict("success", "QA approved")

		errOlder, errNewer := s.Overtake("POST /repos/{owner}/{repo}/check-runs",
			func() error { return w.Work(ctx, older) }, func() error { return w.Work(ctx, newer) })
		if errOlder != nil {
			t.Fatalf("the older verdict: %v", errOlder)
		}
		var snooze *river.JobSnoozeError
		if errors.As(errNewer, &snooze) { // as River does, once the snooze is over
			errNewer = w.Work(ctx, newer)
		}
		if errNewer != nil {
			t.Fatalf("the newer verdict: %v", errNewer)
		}

		runs := s.CheckRuns(repo)
		if len(runs) == 0 {
			t.Fatal("no run of the gate")
		}
		newest := slices.MaxFunc(runs, func(a, b githubtest.CheckRun) int { return int(a.ID - b.ID) })
		if newest.ExternalID != newer.Args.ExternalID || newest.Conclusion != "success" {
			t.Errorf("the gate's newest run is %s %q of %q; want the newer evaluation's success", newest.Conclusion, newest.Title, newest.ExternalID)
		}
		var left int
		if err := db.Read.QueryRow(`SELECT COUNT(*) FROM creation_claims`).Scan(&left); err != nil || left != 0 {
			t.Errorf("%d claims left (%v), want none once the runs are created", left, err)
		}
	})
}
