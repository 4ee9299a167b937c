package recoveryflow

import (
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// The live release is what the cluster reports running: a workload's last
// fact names it and runs its image. After an undo that kept r2's release
// id, the workload runs r1's image: r2 is not what runs.
func TestRunningIsWhatTheClusterReportsWithTheRecordsImage(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		f, db, store := storeFlow(t, dbURL)
		ctx := context.Background()
		now := time.Now().UTC().Add(-time.Hour)
		image := func(id string) string {
			return "registry.example/checkout:" + id
		}
		var rs []records.Record
		for i, id := range []string{"r1", "r2", "r3"} {
			rec := records.Record{ReleaseID: id, App: "checkout", Environment: "staging", Cluster: "eu",
				Repository: "acme/checkout", Kind: records.KindPromote, Image: image(id)}
			if err := db.InTx(ctx, func(tx *sql.Tx) error {
				opened, _, err := store.OpenRelease(ctx, tx, rec, now.Add(time.Duration(i)*time.Minute))
				rs = append([]records.Record{opened}, rs...) // newest first
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		apply := func(workload, release, img string, m int) {
			t.Helper()
			fact := records.Fact{Source: records.SourceDeployment, Cluster: "eu", Namespace: "shop", Name: workload,
				UID: workload + "-uid", Generation: int64(m), ObservedGeneration: int64(m), Phase: records.PhaseHealthy,
				Images: []string{img}, ReleaseID: release, ObservedAt: now.Add(time.Duration(m) * time.Minute)}
			if err := db.InTx(ctx, func(tx *sql.Tx) error {
				_, err := store.ApplyFact(ctx, tx, fact, "", now.Add(time.Duration(m)*time.Minute))
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		apply("api", "r1", image("r1"), 10)
		apply("worker", "r2", image("r2"), 11)
		apply("worker", "r2", image("r1"), 12) // kubectl rollout undo: the id stays, r1's image runs
		got, err := f.running(ctx, rs)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"r1"}; !slices.Equal(got, want) {
			t.Errorf("running %v, want %v (r3 never reached a workload; the worker keeps r2's id but runs r1's image)", got, want)
		}
	})
}

// storeFlow is a flow over a migrated database at dbURL, with its records
// store: enough for what recovery reads from the records.
func storeFlow(t *testing.T, dbURL string) (*flow, *store.DB, *records.Store) {
	t.Helper()
	db := testdb.OpenMigrated(t, dbURL)
	rs := records.NewStore(db)
	return &flow{deps: pipeline.Deps{DB: db, Records: rs}}, db, rs
}
