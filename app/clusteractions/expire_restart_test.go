package clusteractions

import (
	"context"
	"testing"
	"time"

	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// A server that was down for longer than the claim timeout must not fail,
// on its first poll after the restart, the action an agent carried out
// meanwhile and could not report: the agent reports it within its backoff
// once the server is back, and its result is what happened.
func TestTheServersOwnDowntimeDoesNotExpireAClaim(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := testdb.OpenMigrated(t, dbURL)
		s, id, now := claimedRollback(t, db, "agent-1", "")
		// The server goes down for two hours and starts again.
		back := now.Add(2 * time.Hour)
		restarted := &actionStore{db: db, records: records.NewStore(db), started: back}
		for _, agent := range []string{"agent-2", "agent-1"} { // another agent of the cluster polls first
			if _, err := restarted.claim(ctx, "prod-eu", agent, "", agent == "agent-1", back.Add(10*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		res := actionapi.Result{Agent: "agent-1", Status: actionapi.StatusDone, Outcome: actionapi.OutcomeRolledBack}
		st, outcome, why, err := restarted.finish(ctx, "prod-eu", id, res, back.Add(20*time.Second))
		if err != nil || outcome != finishRecorded || st.State != StateDone {
			t.Fatalf("the agent's result after the restart: %v %s (%s), %v; want it recorded, done", outcome, st.State, why, err)
		}
		// A claim that stays without a result still expires, once the
		// agents had their time to report.
		id = enqueueRollback(t, db, "v3", "c3", "")
		claimOne(t, s, "lost-agent", now)
		if _, err := restarted.claim(ctx, "prod-eu", "agent-1", "", false, back.Add(claimGrace+time.Second)); err != nil {
			t.Fatal(err)
		}
		if st, err := Get(ctx, db.Read, id); err != nil || st.State != StateFailed || st.Result.ErrorType != "claim_expired" {
			t.Errorf("a lost claim after the grace: %+v %v, want failed, claim_expired", st, err)
		}
	})
}
