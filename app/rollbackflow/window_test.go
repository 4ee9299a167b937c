package rollbackflow

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/repoconfig"
)

// history is a records store holding, for checkout in prod/prod-eu of
// acme/checkout: r1 healthy, then r2..r<ran> failed (the newest that ran,
// r<ran>, is the current release), then opened releases whose pull
// requests are not merged, newer than all of them.
func history(t *testing.T, dbURL string, ran, opened int) (*store.DB, *records.Store) {
	t.Helper()
	db := testdb.OpenMigrated(t, dbURL)
	st := records.NewStore(db)
	ctx := context.Background()
	start := time.Now().UTC().Add(-24 * time.Hour)
	at := func(i int) time.Time { return start.Add(time.Duration(i) * time.Minute) }
	for i := 1; i <= ran; i++ {
		status := records.TaskFailed
		if i == 1 {
			status = records.TaskSuccess
		}
		fact := records.Fact{Source: records.SourceTask, Repository: "acme/checkout", WorkflowRunID: int64(9000 + i), RunAttempt: 1,
			Status: status, App: "checkout", Environment: "prod", Cluster: "prod-eu", ReleaseID: fmt.Sprintf("r%d", i),
			Images: []string{image(i)}, Metadata: map[string]string{"commit": sha(i)}, ObservedAt: at(i)}
		if status == records.TaskFailed {
			fact.FailureType = "deployment_failure"
		}
		if err := fact.Validate(); err != nil {
			t.Fatalf("fact r%d: %v", i, err)
		}
		if err := db.InTx(ctx, func(tx *sql.Tx) error {
			_, err := st.ApplyFact(ctx, tx, fact, fmt.Sprintf("delivery-r%d", i), at(i))
			return err
		}); err != nil {
			t.Fatalf("apply fact r%d: %v", i, err)
		}
	}
	for i := range opened {
		n := 100 + i
		rec := records.Record{ReleaseID: fmt.Sprintf("pending-%02d", i), App: "checkout", Environment: "prod", Cluster: "prod-eu",
			Repository: "acme/checkout", Kind: records.KindPromote, Image: image(n), GitRevision: sha(n)}
		if err := db.InTx(ctx, func(tx *sql.Tx) error {
			_, _, err := st.OpenRelease(ctx, tx, rec, at(n))
			return err
		}); err != nil {
			t.Fatalf("open %s: %v", rec.ReleaseID, err)
		}
	}
	return db, st
}

func digest(n int) string { return fmt.Sprintf("sha256:%064x", n) }
func image(n int) string  { return fmt.Sprintf("ghcr.io/acme/checkout:v%d@%s", n, digest(n)) }
func sha(n int) string    { return fmt.Sprintf("%040x", 0xabc000+n) }

// windowConfig is a config of acme/checkout with eligibility.window n.
func windowConfig(t *testing.T, n int) *repoconfig.Config {
	t.Helper()
	cfg, problems := repoconfig.Load([]byte(fmt.Sprintf(`version: 1
apps:
  checkout:
    environments:
      prod:
        cluster: prod-eu
        workflows: [deploy.yml]
        rollback: {mode: pull-request, repository: acme/gitops, base: main, file: release.yaml, fields: {image: image, digest: digest}}
eligibility: {window: %d}
`, n)))
	if cfg == nil {
		t.Fatalf("config: %v", problems)
	}
	return cfg
}

// The Roll back button of a release's check run offers the newest eligible
// release before it among the releases that ran, however many releases
// whose pull request is not merged are newer: more of them than
// eligibility.ReadAhead used to fill the records read, and the button
// vanished although r1, the fifth newest release that ran, is eligible.
func TestReleaseCheckTargetIgnoresManyOpenedReleases(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		_, st := history(t, dbURL, 5, eligibility.ReadAhead+1)
		w := &releaseCheckWorker{deps: pipeline.Deps{Records: st, Configs: pipeline.NewRepoConfigs()}}
		ctx := context.Background()
		current, err := st.Get(ctx, "r5")
		if err != nil {
			t.Fatal(err)
		}
		target, ans, err := w.target(ctx, current)
		if err != nil {
			t.Fatal(err)
		}
		if target == nil || target.ReleaseID != "r1" {
			t.Errorf("target of r5 with %d opened releases newer: %+v (%s), want r1, the fifth newest release that ran",
				eligibility.ReadAhead+1, target, ans.Reason)
		}
	})
}

// The button uses the repository's eligibility.window, as `/ripcord
// rollback` does, taken from the config ripcord last read from the default
// branch (it reads nothing from GitHub for it): with window 7, r1 is the
// seventh newest release that ran and the button offers it; with none
// kept, the default 5 holds and nothing is offered.
func TestReleaseCheckTargetUsesTheRepositorysWindow(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		_, st := history(t, dbURL, 7, 0)
		configs := pipeline.NewRepoConfigs()
		w := &releaseCheckWorker{deps: pipeline.Deps{Records: st, Configs: configs}}
		ctx := context.Background()
		current, err := st.Get(ctx, "r7")
		if err != nil {
			t.Fatal(err)
		}
		if target, ans, err := w.target(ctx, current); err != nil || target != nil {
			t.Fatalf("no config kept: target %+v (%s, %v), want none within the default window of 5", target, ans.Reason, err)
		}
		configs.Put("acme/checkout", windowConfig(t, 7), time.Now())
		target, ans, err := w.target(ctx, current)
		if err != nil {
			t.Fatal(err)
		}
		if target == nil || target.ReleaseID != "r1" {
			t.Errorf("window 7: target %+v (%s), want r1, the seventh newest release that ran", target, ans.Reason)
		}
		if !strings.Contains(ans.Reason, "seventh-newest") {
			t.Errorf("reason %q does not place r1 seventh", ans.Reason)
		}
	})
}

// `/ripcord rollback`, the API and the CLI choose the newest eligible
// release before the current one among the releases that ran: more
// opened ones than eligibility.ReadAhead used to crowd r1, the fifth
// newest release that ran, out of the records read, and the rollback was
// refused for want of an eligible target.
func TestRollbackTargetIgnoresManyOpenedReleases(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		_, st := history(t, dbURL, 5, eligibility.ReadAhead+1)
		s := &starter{deps: pipeline.Deps{Records: st}}
		in := input()
		in.Window = 0 // the shell's default: repoconfig.DefaultEligibilityWindow
		plan, _, err := s.decide(context.Background(), in)
		if err != nil {
			t.Fatalf("decide with %d opened releases newer: %v, want r1 as the target", eligibility.ReadAhead+1, err)
		}
		if plan.Target != "r1" || plan.Record.RollbackOf != "r5" || !plan.Request.Rollback.Eligibility.Eligible {
			t.Errorf("plan: target %s rolling back %s, eligible %v; want r1 rolling back r5, eligible",
				plan.Target, plan.Record.RollbackOf, plan.Request.Rollback.Eligibility.Eligible)
		}
	})
}
