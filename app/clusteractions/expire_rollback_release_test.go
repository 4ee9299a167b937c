package clusteractions

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// An expired claim ends the rollback release failed, since nothing may
// ever report on it. Its agent, cut off for longer than the claim timeout,
// may still have rolled back: its late result is recorded, and the facts
// that follow (the agent re-sends the workload's state once it reaches the
// server) take the release from failed to healthy, as seed 003's state
// machine lets facts move any failed release, and the failed release it
// replaced becomes rolled-back.
func TestAnExpiredClaimFailsTheRollbackReleaseAndItsLateFactsStillMakeItHealthy(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := testdb.OpenMigrated(t, dbURL)
		rc := testdb.InsertOnlyRiver(t, db) // insert-only
		rs := records.NewStore(db)
		now := time.Now().UTC()
		s := &actionStore{db: db, records: rs, river: func() *river.Client[*sql.Tx] { return rc },
			log: slog.New(slog.NewTextHandler(io.Discard, nil)), started: now.Add(-time.Hour)}
		for _, r := range []records.Record{
			{ReleaseID: "c2", App: "checkout", Environment: "prod", Cluster: "prod-eu", Kind: records.KindPromote,
				Image: "registry:5000/shop/checkout:v2"},
			{ReleaseID: "rb2", App: "checkout", Environment: "prod", Cluster: "prod-eu", Kind: records.KindRollback,
				RollbackOf: "c2", RollbackReason: "retries exhausted", Image: "registry:5000/shop/checkout:v1"},
		} {
			if err := db.InTx(ctx, func(tx *sql.Tx) error { _, _, err := rs.OpenRelease(ctx, tx, r, now); return err }); err != nil {
				t.Fatal(err)
			}
		}
		id := enqueueRollback(t, db, "v2", "c2", "rb2")
		if got, err := s.claim(ctx, "prod-eu", "cut-off", "", false, now); err != nil || len(got) != 1 {
			t.Fatalf("claim: %v %v", got, err)
		}
		later := now.Add(ClaimTimeout + time.Minute)
		if _, err := s.claim(ctx, "prod-eu", "other", "", false, later); err != nil {
			t.Fatal(err)
		}
		rec, err := rs.Get(ctx, "rb2")
		if err != nil || rec.State != records.StateFailed || rec.LastFactAt != nil {
			t.Fatalf("rollback release after the claim expired: %s %v, want failed with no fact", rec.State, err)
		}
		var why bool
		for _, ev := range mustAudit(t, rs, "rb2") {
			why = why || (ev.Type == records.AuditFailureDetected && strings.Contains(ev.Message, errTypeClaimExpired) && ev.Data["action_id"] == id)
		}
		if !why {
			t.Errorf("rollback release rb2 has no failure_detected event naming action %s and %s: %+v", id, errTypeClaimExpired, mustAudit(t, rs, "rb2"))
		}

		done := actionapi.Result{Agent: "cut-off", Status: actionapi.StatusDone, Outcome: actionapi.OutcomeRolledBack,
			Audit: []actionapi.AuditEvent{{Type: string(records.AuditRollbackCompleted), At: later, Message: "rolled back"}}}
		if _, outcome, why, err := s.finish(ctx, "prod-eu", id, done, later.Add(time.Second)); err != nil || outcome != finishRecorded {
			t.Fatalf("the late result: %v (%s) %v; want it recorded", outcome, why, err)
		}
		healthy := records.Fact{Source: records.SourceDeployment, Cluster: "prod-eu", Namespace: "shop", Name: "checkout",
			UID: "uid-1", Generation: 2, ObservedGeneration: 2, Phase: records.PhaseHealthy,
			Images: []string{"registry:5000/shop/checkout:v1"}, ReleaseID: "rb2", ObservedAt: later.Add(2 * time.Second)}
		var res records.Result
		if err := db.InTx(ctx, func(tx *sql.Tx) error {
			var err error
			res, err = rs.ApplyFact(ctx, tx, healthy, "", later.Add(3*time.Second))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if res.Outcome != records.OutcomeApplied {
			t.Fatalf("the healthy fact: %s (%s), want applied", res.Outcome, res.Reason)
		}
		for rel, want := range map[string]records.State{"rb2": records.StateHealthy, "c2": records.StateRolledBack} {
			if r, err := rs.Get(ctx, rel); err != nil || r.State != want {
				t.Errorf("release %s is %s (%v), want %s", rel, r.State, err, want)
			}
		}
		if r, _ := rs.Get(ctx, "rb2"); r.HealthyAt == nil || r.LastFactAt == nil {
			t.Errorf("rollback release rb2: healthy_at %v, last fact %v; want both set", r.HealthyAt, r.LastFactAt)
		}
	})
}

func mustAudit(t *testing.T, rs *records.Store, release string) []records.AuditEvent {
	t.Helper()
	evs, err := rs.Audit(context.Background(), records.AuditFilter{ReleaseID: release, Oldest: true, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}
