package recoveryflow

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/repoconfig"
)

// Recovery's previous (rollback) target is the newest eligible release
// before the failed one among the releases that ran, however many releases
// whose pull request is not merged (opened) are newer: more of them than
// eligibility.ReadAhead used to fill the records gathered, so r1, healthy
// and the fifth newest release that ran, was not read and recovery saw no
// eligible release to roll back to.
func TestPreviousTargetIgnoresManyOpenedReleases(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		f, db, store := storeFlow(t, dbURL)
		ctx := context.Background()
		start := time.Now().UTC().Add(-24 * time.Hour)
		at := func(i int) time.Time { return start.Add(time.Duration(i) * time.Minute) }
		image := func(i int) string { return fmt.Sprintf("registry.example/checkout:v%d@sha256:%064x", i, i) }
		// r1 healthy, r2..r5 failed: run 9005 deployed r5 and failed.
		for i := 1; i <= 5; i++ {
			fact := records.Fact{Source: records.SourceTask, Repository: "acme/checkout", WorkflowRunID: int64(9000 + i),
				RunAttempt: 1, Status: records.TaskFailed, FailureType: "deployment_failure", App: "checkout",
				Environment: "prod", Cluster: "prod-eu", ReleaseID: fmt.Sprintf("r%d", i), Images: []string{image(i)}, ObservedAt: at(i)}
			if i == 1 {
				fact.Status, fact.FailureType = records.TaskSuccess, ""
			}
			if err := db.InTx(ctx, func(tx *sql.Tx) error {
				_, err := store.ApplyFact(ctx, tx, fact, fmt.Sprintf("delivery-r%d", i), at(i))
				return err
			}); err != nil {
				t.Fatalf("apply fact r%d: %v", i, err)
			}
		}
		for i := range eligibility.ReadAhead + 1 {
			rec := records.Record{ReleaseID: fmt.Sprintf("pending-%02d", i), App: "checkout", Environment: "prod",
				Cluster: "prod-eu", Repository: "acme/checkout", Kind: records.KindPromote, Image: image(100 + i)}
			if err := db.InTx(ctx, func(tx *sql.Tx) error {
				_, _, err := store.OpenRelease(ctx, tx, rec, at(100+i))
				return err
			}); err != nil {
				t.Fatalf("open %s: %v", rec.ReleaseID, err)
			}
		}
		cfg, problems := repoconfig.Load([]byte(`version: 1
apps:
  checkout:
    environments:
      prod:
        cluster: prod-eu
        workflows: [deploy.yml]
        rollback: {mode: workflow, workflow: deploy.yml, input: version}
`))
		if cfg == nil {
			t.Fatalf("config: %v", problems)
		}
		g := gathered{Now: at(200), Run: runInfo{ID: 9005, Attempt: 1, Status: "completed", Conclusion: "failure"},
			Config: configload.Result{Found: true, Config: cfg}, Deploys: []repoconfig.Deploy{{App: "checkout", Environment: "prod"}}}
		if err := f.gather(ctx, nil, "acme/checkout", &g); err != nil {
			t.Fatal(err)
		}
		if g.Failed == nil || g.Failed.ReleaseID != "r5" {
			t.Fatalf("failed release %+v, want r5", g.Failed)
		}
		prev := plan(g).Context.Input.Previous
		if prev == nil || prev.ReleaseID != "r1" || !prev.Eligible {
			t.Errorf("previous target with %d opened releases newer: %+v, want r1, eligible (the fifth newest release that ran)",
				eligibility.ReadAhead+1, prev)
		}
	})
}
