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

// kubernetesRollback is recovery's request to roll r2 of app (v2 failed)
// in shop on prod-eu back to target, for mode kubernetes.
func kubernetesRollback(target recoveryflow.Target) recoveryflow.RollbackRequest {
	ep := recoveryflow.Episode{Repository: "acme/app", App: "app", Environment: "prod", Cluster: "prod-eu", ReleaseID: "r2"}
	ep.Context.Input = recovery.Input{FailedVersion: "v2"}
	ep.Context.Config.Rollback = repoconfig.Rollback{Mode: repoconfig.ModeKubernetes, Namespace: "shop"}
	return recoveryflow.RollbackRequest{Key: "acme/app#9/1", Episode: ep, Target: target, Reason: "retries exhausted"}
}

// openRelease records rec, opened at now: the rollback's target.
func openRelease(t *testing.T, db *store.DB, rec records.Record, now time.Time) {
	t.Helper()
	ctx := context.Background()
	if err := db.InTx(ctx, func(tx *sql.Tx) error { _, _, err := records.NewStore(db).OpenRelease(ctx, tx, rec, now); return err }); err != nil {
		t.Fatal(err)
	}
}

// queueKubernetesRollback hands req to the executor for mode kubernetes in
// a transaction of its own, on a clock stopped at now and an insert-only
// job queue, and returns what Queue returned. The transaction commits
// whatever Queue answers, as the decision's does for a rollback that is
// not started, so a test sees what a refused Queue left behind.
func queueKubernetesRollback(t *testing.T, db *store.DB, now time.Time, req recoveryflow.RollbackRequest) (string, error) {
	t.Helper()
	ctx := context.Background()
	rc := testdb.InsertOnlyRiver(t, db) // insert-only: the jobs it queues are looked at, not run
	d := pipeline.Deps{DB: db, Records: records.NewStore(db), Now: func() time.Time { return now },
		River: func() *river.Client[*sql.Tx] { return rc }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	var id string
	var queueErr error
	if err := db.InTx(ctx, func(tx *sql.Tx) error {
		id, queueErr = clusteractions.KubernetesExecutor(d).Queue(ctx, tx, req)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return id, queueErr
}

// A rollback decided for mode kubernetes opens the rollback release and
// queues the action for the cluster's agent, once however often the
// decision's transaction is replayed.
func TestKubernetesExecutorOpensTheReleaseAndQueuesTheAction(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := testdb.OpenMigrated(t, dbURL)
		rs := records.NewStore(db)
		now := time.Now().UTC()
		good := records.Record{ReleaseID: "r1", App: "app", Environment: "prod", Cluster: "prod-eu", Kind: records.KindPromote,
			Image: "registry:5000/team/app:v1", GitRevision: "aaaaaaaabbbbbbbbccccccccddddddddeeeeeeee"}
		openRelease(t, db, good, now)
		req := kubernetesRollback(recoveryflow.Target{ReleaseID: "r1", Version: "v1"})
		var got []string
		for range 2 { // a replayed decision must not queue a second action
			id, err := queueKubernetesRollback(t, db, now, req)
			got = append(got, id)
			if err != nil {
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
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := testdb.OpenMigrated(t, dbURL)
		now := time.Now().UTC()
		pinned := records.Record{ReleaseID: "r1", App: "app", Environment: "prod", Cluster: "prod-eu", Kind: records.KindPromote,
			Image: "registry:5000/team/app@" + digest}
		openRelease(t, db, pinned, now)
		_, queueErr := queueKubernetesRollback(t, db, now, kubernetesRollback(recoveryflow.Target{ReleaseID: "r1", Digest: digest}))
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
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		db := testdb.OpenMigrated(t, dbURL)
		_, queueErr := queueKubernetesRollback(t, db, time.Now().UTC(),
			kubernetesRollback(recoveryflow.Target{ReleaseID: "r1", Version: "1.2.3+build.7"}))
		var notStarted *recoveryflow.NotStarted
		if !errors.As(queueErr, &notStarted) || !strings.Contains(notStarted.Reason, "target_version") {
			t.Errorf("Queue = %v; want NotStarted naming target_version", queueErr)
		}
	})
}

// A kubernetes rollback in a cluster and environment named at length gets
// an id within records.MaxIDLen, which the agent's facts that echo it must
// fit; it keeps its start, and another decision gets another id.
func TestRollbackReleaseIDIsBounded(t *testing.T) {
	t.Parallel()
	cluster, env := strings.Repeat("c", records.MaxIDLen), strings.Repeat("e", records.MaxIDLen)
	id := clusteractions.RollbackReleaseID("key-1", cluster, env)
	if len(id) > records.MaxIDLen || !strings.HasPrefix(id, "rollback-") || !strings.Contains(id, ":ccc") {
		t.Errorf("RollbackReleaseID = %q (%d bytes), want at most %d keeping rollback-<hash>:<cluster>", id, len(id), records.MaxIDLen)
	}
	if id != clusteractions.RollbackReleaseID("key-1", cluster, env) || id == clusteractions.RollbackReleaseID("key-2", cluster, env) {
		t.Errorf("bounded RollbackReleaseID %q is not the same decision's only", id)
	}
	if got := clusteractions.RollbackReleaseID("key-1", "prod-eu", "prod"); !strings.HasSuffix(got, ":prod-eu/prod") || len(got) != len("rollback-123456789012:prod-eu/prod") {
		t.Errorf("RollbackReleaseID of a short cluster and environment = %q, want it unchanged", got)
	}
}
