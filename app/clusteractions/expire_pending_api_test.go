package clusteractions_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/clusteractions"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// An agent that comes back long after an action was queued must not carry
// out a rollback whose episode ended or alerted a person meanwhile: the
// server does not hand it out, fails it as it fails an expired claim, and
// refuses a result for it; an action queued within the bound is handed out.
func TestAnAgentBackAfterTheClaimTimeoutIsNotHandedAnOldAction(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := startServer(t, dbURL)
		oldOne := rollback("rb-old:prod-eu/prod")
		oldOne.RollbackOf = "c-old:prod-eu/prod"
		old := s.enqueue(oldOne)
		// Queued a day ago, when the agent went away.
		if _, err := s.db.Write.ExecContext(context.Background(), `UPDATE cluster_actions SET created_at = $1 WHERE id = $2`,
			store.Micros(time.Now().Add(-24*time.Hour)), old); err != nil {
			t.Fatal(err)
		}
		recent := rollback("rb-new:prod-eu/prod")
		recent.RollbackOf = "c-new:prod-eu/prod"
		fresh := s.enqueue(recent)
		if _, err := s.db.Write.ExecContext(context.Background(), `UPDATE cluster_actions SET created_at = $1 WHERE id = $2`,
			store.Micros(time.Now().Add(-clusteractions.ClaimTimeout+5*time.Minute)), fresh); err != nil {
			t.Fatal(err)
		}

		got, code := poll(s, "agent-back", "")
		if code != http.StatusOK || len(got) != 1 || got[0].ID != fresh {
			t.Fatalf("the agent's poll: %d %+v; want only the action queued within the bound", code, got)
		}
		st := s.action(old)
		if st.State != clusteractions.StateFailed || st.Result == nil || st.Result.ErrorType != "not_claimed" ||
			!strings.Contains(st.Result.Reason, "no agent of cluster prod-eu took the action") {
			t.Fatalf("the day-old action: %+v %+v; want failed, not_claimed", st, st.Result)
		}
		var types []string
		for _, e := range s.audit("c-old:prod-eu/prod") {
			types = append(types, string(e.Type))
			if e.Data["error_type"] != "not_claimed" || e.Data["action_id"] != old {
				t.Errorf("audit event %s data %v", e.Type, e.Data)
			}
		}
		if strings.Join(types, " ") != string(records.AuditRollbackFailed) {
			t.Errorf("audit of the failed release: %v; want one rollback_failed, as for an expired claim", types)
		}
		var refusal struct{ Error string }
		if code := s.call(http.MethodPost, actionsPath+"/"+old, euToken, done("agent-back"), &refusal); code != http.StatusConflict ||
			!strings.Contains(refusal.Error, "already ended failed") {
			t.Errorf("a result for the day-old action: %d %q, want 409", code, refusal.Error)
		}
		if again, _ := poll(s, "agent-other", ""); len(again) != 0 {
			t.Errorf("another agent got %+v", again)
		}
	})
}
