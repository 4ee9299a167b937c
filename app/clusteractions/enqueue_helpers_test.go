package clusteractions

import (
	"context"
	"database/sql"
	"testing"

	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/store"
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
