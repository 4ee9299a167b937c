package clusteractions

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// enqueueRollback queues a rollback of checkout in shop on prod-eu, from
// failed to v1, of release of (for the rollback release releaseID, if
// any), and returns its id.
func enqueueRollback(t *testing.T, db *store.DB, failed, of, releaseID string) string {
	t.Helper()
	var id string
	if err := db.InTx(context.Background(), func(tx *sql.Tx) error {
		var err error
		id, err = Enqueue(context.Background(), tx, Action{Cluster: "prod-eu", Kind: actionapi.KindRollback, Namespace: "shop",
			Deployment: "checkout", TargetVersion: "v1", FailedVersion: failed, RollbackOf: of, ReleaseID: releaseID})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return id
}

// claimedRollback queues the rollback of release c2 from v2 (for the
// rollback release releaseID, if any) and has agent claim it now from the
// store of a server that started an hour ago, so the claim may expire. It
// returns that store, the action's id and the time of the claim.
func claimedRollback(t *testing.T, db *store.DB, agent, releaseID string) (*actionStore, string, time.Time) {
	t.Helper()
	rc := testdb.InsertOnlyRiver(t, db) // insert-only: an episode's end is queued, not run
	id := enqueueRollback(t, db, "v2", "c2", releaseID)
	now := time.Now().UTC()
	s := &actionStore{db: db, records: records.NewStore(db), river: func() *river.Client[*sql.Tx] { return rc },
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), started: now.Add(-time.Hour)}
	claimOne(t, s, agent, now)
	return s, id, now
}

// claimOne has agent claim the pending actions of prod-eu from s at now,
// and fails the test unless it gets exactly one.
func claimOne(t *testing.T, s *actionStore, agent string, now time.Time) {
	t.Helper()
	if got, err := s.claim(context.Background(), "prod-eu", agent, "", false, now); err != nil || len(got) != 1 {
		t.Fatalf("claim: %v %v", got, err)
	}
}
