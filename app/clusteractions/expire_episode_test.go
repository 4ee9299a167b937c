package clusteractions

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A claim that got no result within the claim timeout (claim_expired)
// queues, in the transaction that fails it, the end of the episode that
// waits on its rollback release, with the expiry's reason: the episode
// does not wait for the stall alert.
func TestAnExpiredClaimEndsItsEpisodeInTheSameTransaction(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := testdb.OpenMigrated(t, dbURL)
		s, id, now := claimedRollback(t, db, "lost-agent", "rb2")
		later := now.Add(ClaimTimeout + time.Minute)
		for range 2 { // a second poll finds nothing more to expire
			if _, err := s.claim(ctx, "prod-eu", "new-agent", "", false, later); err != nil {
				t.Fatal(err)
			}
		}
		// The lost agent's own failure, reported late, replaces the expiry
		// but queues no second end: the episode is alerted once.
		late := actionapi.Result{Agent: "lost-agent", Status: actionapi.StatusFailed, Outcome: actionapi.OutcomeRollbackFailed,
			ErrorType: "rollout_timeout", Reason: "the rollout did not finish"}
		if _, outcome, why, err := s.finish(ctx, "prod-eu", id, late, later.Add(time.Minute)); err != nil || outcome != finishRecorded {
			t.Fatalf("late result: %v %s %v", outcome, why, err)
		}
		q := `SELECT json(args) FROM river_job WHERE kind = 'recovery_rollback_outcome'`
		if db.Dialect == store.Postgres {
			q = `SELECT args::text FROM river_job WHERE kind = 'recovery_rollback_outcome'`
		}
		rows, err := db.Read.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var got []map[string]string
		for rows.Next() {
			var args string
			if err := rows.Scan(&args); err != nil {
				t.Fatal(err)
			}
			m := map[string]string{}
			if err := json.Unmarshal([]byte(args), &m); err != nil {
				t.Fatal(err)
			}
			got = append(got, m)
		}
		if len(got) != 1 || got[0]["release_id"] != "rb2" || got[0]["outcome"] != "failed" ||
			!strings.Contains(got[0]["why"], "claim_expired") || !strings.Contains(got[0]["why"], "agent lost-agent claimed the action") ||
			!strings.Contains(got[0]["why"], id) {
			t.Errorf("queued episode ends %v, want one failed outcome of rb2 naming action %s and its expiry", got, id)
		}
	})
}
