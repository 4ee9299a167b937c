package clusteractions_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/clusteractions"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/app/recoveryflow"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/recovery"
	"github.com/ripcord/ripcord/repoconfig"
)

// A rollback decided for mode kubernetes opens the rollback release and
// queues the action for the cluster's agent, once however often the
// decision's transaction is replayed.
func TestKubernetesExecutorOpensTheReleaseAndQueuesTheAction(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := testdb.OpenMigrated(t, dbURL)
		rs := records.NewStore(db)
		now := time.Now().UTC()
		rc, err := river.NewClient(db.RiverDriver(), &river.Config{}) // insert-only: the deployment sync it queues
		if err != nil {
			t.Fatal(err)
		}
		d := pipeline.Deps{DB: db, Records: rs, Now: func() time.Time { return now },
			River: func() *river.Client[*sql.Tx] { return rc }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		good := records.Record{ReleaseID: "r1", App: "app", Environment: "prod", Cluster: "prod-eu", Kind: records.KindPromote,
			Image: "registry:5000/team/app:v1", GitRevision: "aaaaaaaabbbbbbbbccccccccddddddddeeeeeeee"}
		if err := db.InTx(ctx, func(tx *sql.Tx) error { _, _, err := rs.OpenRelease(ctx, tx, good, now); return err }); err != nil {
			t.Fatal(err)
		}
		ep := recoveryflow.Episode{Repository: "acme/app", App: "app", Environment: "prod", Cluster: "prod-eu", ReleaseID: "r2"}
		ep.Context.Input = recovery.Input{FailedVersion: "v2"}
		ep.Context.Config.Rollback = repoconfig.Rollback{Mode: repoconfig.ModeKubernetes, Namespace: "shop"}
		req := recoveryflow.RollbackRequest{Key: "acme/app#9/1", Episode: ep,
			Target: recoveryflow.Target{ReleaseID: "r1", Version: "v1"}, Reason: "retries exhausted"}
		x := clusteractions.KubernetesExecutor(d)
		var got []string
		for range 2 { // a replayed decision must not queue a second action
			if err := db.InTx(ctx, func(tx *sql.Tx) error {
				id, err := x.Queue(ctx, tx, req)
				got = append(got, id)
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		var syncs int
		if err := db.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM river_job WHERE kind = 'deployment_sync'`).Scan(&syncs); err != nil || syncs != 1 {
			t.Fatalf("%d deployment syncs queued (%v), want one for the rollback release", syncs, err)
		}
		id := clusteractions.RollbackReleaseID(req.Key, "prod-eu", "prod")
		// The episode waits for this release's record to end it.
		if len(got) != 2 || got[0] != id || got[1] != id {
			t.Errorf("Queue returned %q, want the rollback release %s both times", got, id)
		}
		// Its start job stops a rollout in waves of r2 (app/rolloutflow).
		startQ := `SELECT COUNT(*) FROM river_job WHERE kind = 'rollout_start' AND json_extract(args, '$.release_id') = $1`
		if db.Dialect == store.Postgres {
			startQ = `SELECT COUNT(*) FROM river_job WHERE kind = 'rollout_start' AND args ->> 'release_id' = $1`
		}
		var starts int
		if err := db.Read.QueryRowContext(ctx, startQ, id).Scan(&starts); err != nil || starts != 1 {
			t.Errorf("%d rollout_start jobs for the rollback release (%v), want 1", starts, err)
		}
		rec, err := rs.Get(ctx, id)
		if err != nil || rec.Kind != records.KindRollback || rec.RollbackOf != "r2" || rec.GitRevision != good.GitRevision {
			t.Fatalf("rollback release %s = %+v, %v; want kind rollback of r2 at r1's revision", id, rec, err)
		}
		var n int
		var spec string
		if err := db.Read.QueryRowContext(ctx, `SELECT COUNT(*), MAX(spec) FROM cluster_actions WHERE cluster = 'prod-eu'`).Scan(&n, &spec); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("%d actions queued, want 1", n)
		}
		for _, want := range []string{`"namespace":"shop"`, `"deployment":"app"`, `"target_version":"v1"`, `"failed_version":"v2"`, `"release_id":"` + id} {
			if !strings.Contains(spec, want) {
				t.Errorf("action %s lacks %s", spec, want)
			}
		}
	})
}

// A target release pinned by digest only has no tag for the agent to set:
// the rollback is not started (the episode ends rollback_failed with the
// reason) rather than queued without a target for the agent to guess.
func TestAKubernetesRollbackToADigestOnlyTargetIsNotStarted(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := testdb.OpenMigrated(t, dbURL)
		rc, err := river.NewClient(db.RiverDriver(), &river.Config{})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		d := pipeline.Deps{DB: db, Records: records.NewStore(db), Now: func() time.Time { return now },
			River: func() *river.Client[*sql.Tx] { return rc }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		pinned := records.Record{ReleaseID: "r1", App: "app", Environment: "prod", Cluster: "prod-eu", Kind: records.KindPromote,
			Image: "registry:5000/team/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
		if err := db.InTx(ctx, func(tx *sql.Tx) error { _, _, err := d.Records.OpenRelease(ctx, tx, pinned, now); return err }); err != nil {
			t.Fatal(err)
		}
		ep := recoveryflow.Episode{Repository: "acme/app", App: "app", Environment: "prod", Cluster: "prod-eu", ReleaseID: "r2"}
		ep.Context.Input = recovery.Input{FailedVersion: "v2"}
		ep.Context.Config.Rollback = repoconfig.Rollback{Mode: repoconfig.ModeKubernetes, Namespace: "shop"}
		req := recoveryflow.RollbackRequest{Key: "acme/app#9/1", Episode: ep, Reason: "retries exhausted",
			Target: recoveryflow.Target{ReleaseID: "r1", Digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}
		var queueErr error
		if err := db.InTx(ctx, func(tx *sql.Tx) error {
			_, queueErr = clusteractions.KubernetesExecutor(d).Queue(ctx, tx, req)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		var notStarted *recoveryflow.NotStarted
		if !errors.As(queueErr, &notStarted) || !strings.Contains(notStarted.Reason, "digest") {
			t.Errorf("Queue = %v; want NotStarted saying the target is pinned by digest", queueErr)
		}
		var n int
		if err := db.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM cluster_actions`).Scan(&n); err != nil || n != 0 {
			t.Errorf("%d actions queued (%v); want none without a version to roll back to", n, err)
		}
	})
}

// An action the agent cannot be handed (here a target version that is no
// image tag, from a release recorded with a bare version) is a rollback
// that does not start, with the field named: as a plain error it failed
// the decision's transaction again at every retry of its job.
func TestAKubernetesRollbackThatCannotBeQueuedIsNotStarted(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := testdb.OpenMigrated(t, dbURL)
		rc, err := river.NewClient(db.RiverDriver(), &river.Config{})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		d := pipeline.Deps{DB: db, Records: records.NewStore(db), Now: func() time.Time { return now },
			River: func() *river.Client[*sql.Tx] { return rc }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		ep := recoveryflow.Episode{Repository: "acme/app", App: "app", Environment: "prod", Cluster: "prod-eu", ReleaseID: "r2"}
		ep.Context.Input = recovery.Input{FailedVersion: "v2"}
		ep.Context.Config.Rollback = repoconfig.Rollback{Mode: repoconfig.ModeKubernetes, Namespace: "shop"}
		req := recoveryflow.RollbackRequest{Key: "acme/app#9/1", Episode: ep, Reason: "retries exhausted",
			Target: recoveryflow.Target{ReleaseID: "r1", Version: "1.2.3+build.7"}}
		var queueErr error
		if err := db.InTx(ctx, func(tx *sql.Tx) error {
			_, queueErr = clusteractions.KubernetesExecutor(d).Queue(ctx, tx, req)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		var notStarted *recoveryflow.NotStarted
		if !errors.As(queueErr, &notStarted) || !strings.Contains(notStarted.Reason, "target_version") {
			t.Errorf("Queue = %v; want NotStarted naming target_version", queueErr)
		}
	})
}
