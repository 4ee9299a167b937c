package clusteractions_test

import (
	"context"
	"database/sql"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/clusteractions"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// rollbackReleaseFailed checks that the episode's rollback release ended
// failed, never having run, with the action and why in its audit events,
// and that the stall check stall_after later finds nothing to alert.
func (e episodeK8s) rollbackReleaseFailed(t *testing.T, s *server, actionID, why string) {
	t.Helper()
	ctx := context.Background()
	rs := records.NewStore(s.db)
	rec, err := rs.Get(ctx, e.rollback)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != records.StateFailed || rec.LastFactAt != nil {
		t.Errorf("rollback release %s is %s (last fact %v), want failed with no fact", e.rollback, rec.State, rec.LastFactAt)
	}
	var changed, detected bool
	for _, ev := range s.audit(e.rollback) {
		if ev.Data["action_id"] != actionID || !strings.Contains(ev.Message, why) {
			continue
		}
		switch ev.Type {
		case records.AuditStateChanged:
			changed = ev.Data["from"] == string(records.StateOpened) && ev.Data["to"] == string(records.StateFailed)
		case records.AuditFailureDetected:
			detected = true
		}
	}
	if !changed || !detected {
		t.Errorf("rollback release %s: state_changed opened -> failed %v, failure_detected %v naming action %s and %q; audit %+v",
			e.rollback, changed, detected, actionID, why, s.audit(e.rollback))
	}
	// The stall job and the stall scan, run stall_after and more later.
	later := time.Now().Add(time.Hour)
	var stalled bool
	if err := s.db.InTx(ctx, func(tx *sql.Tx) error {
		var err error
		_, _, stalled, err = rs.MarkStalled(ctx, tx, e.rollback, later, records.DefaultStallAfter)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if stalled {
		t.Errorf("rollback release %s raised a stall alert after its rollback failed", e.rollback)
	}
	cands, err := rs.StallCandidates(ctx, later, records.StallCandidate{}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(cands, func(c records.StallCandidate) bool { return c.ReleaseID == e.rollback }) {
		t.Errorf("rollback release %s is still a stall candidate", e.rollback)
	}
}

// A rollback action the agent ends without rolling back (a skip, an alert,
// a failure before the patch) ends the rollback release failed in the
// transaction that records the result, with the agent's reason: nothing
// will ever report on it, and left opened it would raise a second,
// "stalled" alert about a rollback whose episode already said why.
func TestAFailedActionEndsItsRollbackReleaseFailed(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := startServer(t, dbURL)
		cases := endedBeforeThePatch()
		for i, res := range cases {
			e, id := claimedByAgentA(t, s, int64(500+i))
			s.reportTwice(id, res) // a repeated result changes nothing more
			// Same transaction as the result: failed before any job ran.
			e.rollbackReleaseFailed(t, s, id, res.Reason)
			e.waitEnded(t, s, res.Reason)
			n := 0
			for _, ev := range s.audit(e.rollback) {
				if ev.Type == records.AuditStateChanged {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s: %d state changes of the rollback release, want 1", res.Outcome, n)
			}
		}
	})
}

// An action no agent took within the claim timeout (not_claimed) ends its
// rollback release failed on the poll that expires it.
func TestAnActionNoAgentTookEndsItsRollbackReleaseFailed(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := startServer(t, dbURL)
		e, id := queuedAgo(t, s, 600, clusteractions.ClaimTimeout+time.Minute)
		if got, code := poll(s, "agent-a", ""); code != http.StatusOK || len(got) != 0 {
			t.Fatalf("poll: %d %+v, want nothing handed out", code, got)
		}
		e.rollbackReleaseFailed(t, s, id, "not_claimed")
		e.waitEnded(t, s, "not_claimed")
	})
}

// An action that rolled back leaves its rollback release to the facts: it
// stays opened, and the Healthy fact that follows makes it healthy, the
// failed release rolled-back and the episode rolled_back, as before.
func TestASuccessfulActionLeavesItsRollbackReleaseToTheFacts(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := startServer(t, dbURL)
		e, id := claimedByAgentA(t, s, 700)
		if code := s.call(http.MethodPost, actionsPath+"/"+id, euToken, done("agent-a"), nil); code != http.StatusOK {
			t.Fatalf("report done: %d", code)
		}
		rs := records.NewStore(s.db)
		if rec, err := rs.Get(context.Background(), e.rollback); err != nil || rec.State != records.StateOpened {
			t.Fatalf("rollback release after a successful action: %s %v, want opened until its facts", rec.State, err)
		}
		e.healthyFact(t, s, "uid-700")
		for id, want := range map[string]records.State{e.rollback: records.StateHealthy, e.failed: records.StateRolledBack} {
			if rec, err := rs.Get(context.Background(), id); err != nil || rec.State != want {
				t.Errorf("release %s is %s (%v), want %s", id, rec.State, err, want)
			}
		}
	})
}
