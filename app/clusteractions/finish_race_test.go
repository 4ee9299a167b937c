package clusteractions

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// Two results for one action racing each other (two replicas of an agent,
// or a retry racing the first request) are taken one after the other: the
// second is judged against the first's result, a repeat when it says the
// same and a conflict when it does not, so the action ends once, with one
// audit event and at most one end of its episode. The first result's
// transaction is held open while the second request runs, so on PostgreSQL
// the second reads the action while the first has stored but not committed
// its result.
func TestTwoResultsRacingForOneActionEndItOnce(t *testing.T) {
	t.Parallel()
	failed := func(agent string) actionapi.Result {
		return actionapi.Result{Agent: agent, Status: actionapi.StatusFailed, Outcome: actionapi.OutcomeRollbackFailed,
			ErrorType: "rollout_failed", Reason: "pod crashed",
			Audit: []actionapi.AuditEvent{{Type: string(records.AuditRollbackFailed), Message: "pod crashed"}}}
	}
	rolledBack := actionapi.Result{Agent: "agent-a", Status: actionapi.StatusDone, Outcome: actionapi.OutcomeRolledBack,
		Audit: []actionapi.AuditEvent{{Type: string(records.AuditRollbackCompleted), Message: "rolled back"}}}
	cases := []struct {
		name          string
		first, second actionapi.Result
		want          finishOutcome
		event         records.AuditType
		episodeEnds   int
	}{
		{"the same failure reported twice", failed("agent-a"), failed("agent-a"), finishRepeat, records.AuditRollbackFailed, 1},
		{"a failure racing the rollback that succeeded", rolledBack, failed("agent-a"), finishConflict, records.AuditRollbackCompleted, 0},
		{"another agent's failure racing the claimant's", failed("agent-a"), failed("agent-b"), finishConflict, records.AuditRollbackFailed, 1},
	}
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := testdb.OpenMigrated(t, dbURL)
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				s, id, now := claimedRollback(t, db, "agent-a", "rb"+string(rune('a'+i)))
				endsBefore := jobs(t, db, "recovery_rollback_outcome")

				type answer struct {
					outcome finishOutcome
					why     string
					err     error
				}
				second, answered := make(chan answer, 1), make(chan struct{})
				err := db.InTx(ctx, func(tx *sql.Tx) error {
					// The first request, as finish takes it, up to its commit...
					st, err := scanStored(tx.QueryRowContext(ctx, `SELECT `+storedColumns+` FROM cluster_actions WHERE id = $1`, id))
					if err != nil {
						return err
					}
					if outcome, why := decideFinish(st, c.first); outcome != finishRecorded {
						t.Fatalf("the first result: %v (%s), want it recorded", outcome, why)
					}
					if _, err := s.finishTx(ctx, tx, st, c.first, now); err != nil {
						return err
					}
					// ...while the second one comes in.
					go func() {
						_, outcome, why, err := s.finish(ctx, "prod-eu", id, c.second, now.Add(time.Second))
						second <- answer{outcome, why, err}
						close(answered)
					}()
					if db.Dialect == store.Postgres {
						waitForActionLock(t, db, answered)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				got := <-second
				if got.err != nil || got.outcome != c.want {
					t.Fatalf("the second result: %s (%s), %v; want %s", outcomeName[got.outcome], got.why, got.err, outcomeName[c.want])
				}
				st, err := Get(ctx, db.Read, id)
				if err != nil || st.Result == nil || st.Result.Agent != c.first.Agent || st.Result.Outcome != c.first.Outcome {
					t.Fatalf("stored: %+v %v; want the first result", st.Result, err)
				}
				evs, err := records.NewStore(db).Audit(ctx, records.AuditFilter{ReleaseID: "c2", Limit: 500})
				if err != nil {
					t.Fatal(err)
				}
				var mine []records.AuditType
				for _, e := range evs {
					if e.Data["action_id"] == id {
						mine = append(mine, e.Type)
					}
				}
				if len(mine) != 1 || mine[0] != c.event {
					t.Errorf("audit events of the action: %v; want one %s", mine, c.event)
				}
				if n := jobs(t, db, "recovery_rollback_outcome") - endsBefore; n != c.episodeEnds {
					t.Errorf("episode ends queued: %d, want %d", n, c.episodeEnds)
				}
			})
		}
	})
}

var outcomeName = map[finishOutcome]string{finishRecorded: "recorded", finishRepeat: "a repeat",
	finishNotFound: "not found", finishConflict: "a conflict"}

// waitForActionLock waits until a session waits for a row lock of
// cluster_actions (the second result's request, behind the first's
// transaction), or until that request answered without waiting.
func waitForActionLock(t *testing.T, db *store.DB, answered <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := db.Read.QueryRow(`SELECT COUNT(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%cluster_actions%' AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the second result neither waited for the first's lock nor answered")
		}
		select {
		case <-answered:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}
