package rollbackflow

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// releaseChecks is a release-check worker on history(3) (r3 the current
// release, failed), with a fake GitHub and a River client that is not
// started: the jobs it queues stay queued, as live ones.
type releaseChecks struct {
	t  *testing.T
	db *store.DB
	st *records.Store
	gh *githubtest.Server
	rc *river.Client[*sql.Tx]
	w  *releaseCheckWorker
}

func newReleaseChecks(t *testing.T, dbURL string) *releaseChecks {
	t.Helper()
	db, st := history(t, dbURL, 3, 0)
	gh := githubtest.NewServer(t)
	if _, err := db.Write.Exec(`INSERT INTO installations (id, created_at, updated_at) VALUES ($1, 0, 0)`, githubtest.InstallationID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Write.Exec(`INSERT INTO installation_repositories (installation_id, repository, added_at) VALUES ($1, 'acme/checkout', 0)`,
		githubtest.InstallationID); err != nil {
		t.Fatal(err)
	}
	rc := testdb.InsertOnlyRiver(t, db)
	cc, err := ghclient.New(ghclient.Config{AppID: githubtest.AppID, PrivateKey: githubtest.AppPrivateKey(t), APIURL: gh.URL()})
	if err != nil {
		t.Fatal(err)
	}
	w := &releaseCheckWorker{deps: pipeline.Deps{DB: db, Records: st, GitHub: cc, Configs: pipeline.NewRepoConfigs(),
		River: func() *river.Client[*sql.Tx] { return rc }, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: time.Now,
		App: func() pipeline.AppIdentity { return pipeline.AppIdentity{Configured: true, ID: githubtest.AppID} }}}
	return &releaseChecks{t: t, db: db, st: st, gh: gh, rc: rc, w: w}
}

// job queues the check-run job of r3 as it stands, and returns it.
func (c *releaseChecks) job() *river.Job[ReleaseCheckArgs] {
	c.t.Helper()
	r := c.release()
	args := ReleaseCheckArgs{ReleaseID: r.ReleaseID, Version: r.UpdatedAt.UnixMicro()}
	row, err := c.rc.Insert(context.Background(), args, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	return &river.Job[ReleaseCheckArgs]{JobRow: &rivertype.JobRow{ID: row.Job.ID, Attempt: 1}, Args: args}
}

func (c *releaseChecks) release() records.Record {
	c.t.Helper()
	r, err := c.st.Get(context.Background(), "r3")
	if err != nil {
		c.t.Fatal(err)
	}
	return r
}

func (c *releaseChecks) shown() []string {
	var out []string
	for _, cr := range c.gh.CheckRuns("acme/checkout") {
		out = append(out, cr.Status+"/"+cr.Conclusion+" "+strconv.Quote(cr.Title))
	}
	return out
}

// Two check-run jobs of a release run side by side (each change of the
// release queues one): both find no run on GitHub, and one creates it
// while the other waits for that creation and then updates the run, not
// making a second one that would stay as first written for good.
func TestReleaseCheckJobsSideBySideCreateOneRun(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		c := newReleaseChecks(t, dbURL)
		first, second := c.job(), c.job()
		errFirst, errSecond := c.gh.Overtake("POST /repos/{owner}/{repo}/check-runs",
			func() error { return c.w.Work(context.Background(), first) }, func() error { return c.w.Work(context.Background(), second) })
		if errFirst != nil {
			t.Fatalf("the first job: %v", errFirst)
		}
		var snooze *river.JobSnoozeError
		if errors.As(errSecond, &snooze) { // as River does, once the snooze is over
			errSecond = c.w.Work(context.Background(), second)
		}
		if errSecond != nil {
			t.Fatalf("the second job: %v", errSecond)
		}
		if runs := c.shown(); len(runs) != 1 {
			t.Errorf("%s runs: %s; want one", ReleaseCheckName, strings.Join(runs, ", "))
		}
	})
}

// The release changes while its check-run job writes, and the job of the
// change writes first: GitHub keeps the last write, so the older job must
// not leave the older state showing. It reads the release again after
// writing, and writes what it shows now.
func TestAReleaseCheckJobOvertakenByAChangeLeavesTheChangeShowing(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		c := newReleaseChecks(t, dbURL)
		if err := c.w.Work(context.Background(), c.job()); err != nil {
			t.Fatalf("first check-run job: %v", err)
		}
		before := c.shown()
		older := c.job()
		errOld, errNew := c.gh.Overtake("PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}", func() error {
			return c.w.Work(context.Background(), older)
		}, func() error {
			// The deploy of r3 is re-run and succeeds.
			fact := records.Fact{Source: records.SourceTask, Repository: "acme/checkout", WorkflowRunID: 9003, RunAttempt: 2,
				Status: records.TaskSuccess, App: "checkout", Environment: "prod", Cluster: "prod-eu", ReleaseID: "r3",
				Images: []string{image(3)}, Metadata: map[string]string{"commit": sha(3)}, ObservedAt: time.Now().UTC()}
			if err := c.db.InTx(context.Background(), func(tx *sql.Tx) error {
				_, err := c.st.ApplyFact(context.Background(), tx, fact, "delivery-r3-again", time.Now().UTC())
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return c.w.Work(context.Background(), c.job())
		})
		if errOld != nil || errNew != nil {
			t.Fatalf("check-run jobs: the older %v, the newer %v", errOld, errNew)
		}
		r := c.release()
		if r.UpdatedAt.UnixMicro() == older.Args.Version {
			t.Fatal("setup: the fact did not change r3")
		}
		want, _, err := c.w.render(context.Background(), r, "")
		if err != nil {
			t.Fatal(err)
		}
		runs := c.gh.CheckRuns("acme/checkout")
		if len(runs) != 1 || runs[0].Title != want.Title || runs[0].Summary != want.Summary {
			t.Errorf("%s runs: %s; want one showing %q, r3 as it stands (before the change: %s)",
				ReleaseCheckName, strings.Join(c.shown(), ", "), want.Title, strings.Join(before, ", "))
		}
	})
}
