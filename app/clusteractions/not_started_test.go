package clusteractions_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/clusteractions"
	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

func notStarted(agent string) actionapi.Result {
	return actionapi.Result{Agent: agent, Status: actionapi.StatusNotStarted, Outcome: actionapi.OutcomeNotStarted,
		ErrorType: "agent_stopped", Reason: "the agent stopped before it patched shop/checkout: nothing was changed"}
}

// An agent stopped before it touched the cluster gives the action back:
// nothing was tried, so the episode goes on and nothing is written to the
// audit log; the action is pending again and the next poll of any agent of
// the cluster (the restarted one, or another replica) claims it and carries
// it out. The agent saying it again is a repeat; once another agent has
// claimed it, or once it ended, it is refused.
func TestAnActionGivenBackNotStartedIsHandedOutAgain(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := startServer(t, dbURL)
		id := s.enqueue(rollback("rb1:prod-eu/prod"))
		if got, _ := poll(s, "agent-a", ""); len(got) != 1 || got[0].ID != id {
			t.Fatalf("agent a's poll: %+v", got)
		}

		var ans struct {
			State   string
			Outcome string
			Repeat  bool
		}
		if code := s.call(http.MethodPost, actionsPath+"/"+id, euToken, notStarted("agent-a"), &ans); code != http.StatusOK ||
			ans.State != clusteractions.StatePending || ans.Outcome != actionapi.OutcomeNotStarted || ans.Repeat {
			t.Fatalf("not_started: %d %+v; want 200, pending", code, ans)
		}
		if st := s.action(id); st.State != clusteractions.StatePending || st.Result != nil || st.ClaimedAt != nil || st.FinishedAt != nil {
			t.Fatalf("stored %+v; want pending again, without a result", st)
		}
		if code := s.call(http.MethodPost, actionsPath+"/"+id, euToken, notStarted("agent-a"), &ans); code != http.StatusOK || !ans.Repeat {
			t.Errorf("not_started again (a lost answer): %d %+v; want 200 repeat", code, ans)
		}
		if code := s.call(http.MethodPost, actionsPath+"/"+id, euToken, notStarted("agent-c"), nil); code != http.StatusConflict {
			t.Errorf("not_started from an agent that never claimed it: %d; want 409", code)
		}
		// No rollback was tried, but the release being rolled back says
		// its rollback waits again, once, however often the agent says so.
		if evs := s.audit("c2:prod-eu/prod"); len(evs) != 1 || evs[0].Type != records.AuditRollbackRequeued ||
			evs[0].Data["action_id"] != id || evs[0].Data["agent"] != "agent-a" {
			t.Errorf("audit of the failed release: %+v; want one rollback_requeued event naming the action and agent-a", evs)
		}
		if ended := s.audit("rb1:prod-eu/prod"); len(ended) != 0 {
			t.Errorf("audit of the rollback release: %+v; want nothing", ended)
		}

		if got, _ := poll(s, "agent-b", ""); len(got) != 1 || got[0].ID != id {
			t.Fatalf("another replica's poll: %+v; want the action given back", got)
		}
		s.refused(id, notStarted("agent-a"), "claimed by agent agent-b", "agent a's not_started once agent b claimed it")
		if code := s.call(http.MethodPost, actionsPath+"/"+id, euToken, done("agent-b"), &ans); code != http.StatusOK || ans.State != "done" {
			t.Fatalf("agent b's result: %d %+v", code, ans)
		}
		s.refused(id, notStarted("agent-b"), "already ended done", "not_started after the action ended")
	})
}

// An action given back keeps its queue time: one no agent carries out
// within the claim timeout of being queued (an agent stopped again and
// again) fails not_claimed, as any action nobody took, instead of waiting
// for ever.
func TestAnActionGivenBackStillExpiresFromWhenItWasQueued(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := startServer(t, dbURL)
		id := s.enqueue(rollback("rb1:prod-eu/prod"))
		if got, _ := poll(s, "agent-a", ""); len(got) != 1 {
			t.Fatalf("agent a's poll: %+v", got)
		}
		if code := s.call(http.MethodPost, actionsPath+"/"+id, euToken, notStarted("agent-a"), nil); code != http.StatusOK {
			t.Fatalf("not_started: %d", code)
		}
		// It was queued longer ago than the claim timeout.
		if _, err := s.db.Write.ExecContext(context.Background(), `UPDATE cluster_actions SET created_at = $1 WHERE id = $2`,
			store.Micros(time.Now().Add(-clusteractions.ClaimTimeout-time.Minute)), id); err != nil {
			t.Fatal(err)
		}
		if got, _ := poll(s, "agent-a", "&resume=true"); len(got) != 0 {
			t.Fatalf("the restarted agent got %+v; want nothing: the action is past its time", got)
		}
		if st := s.action(id); st.State != clusteractions.StateFailed || st.Result == nil || st.Result.ErrorType != "not_claimed" {
			t.Fatalf("stored %+v; want failed, not_claimed", st)
		}
	})
}

// A not_started result says nothing happened: it carries no audit event,
// and one that does is refused naming the field rather than stored as if a
// rollback had begun.
func TestANotStartedResultWithAuditEventsIsRefused(t *testing.T) {
	t.Parallel()
	s := startServer(t, testdb.MigratedURL(t, "sqlite"))
	id := s.enqueue(rollback("rb1:prod-eu/prod"))
	if got, _ := poll(s, "agent-a", ""); len(got) != 1 {
		t.Fatalf("agent a's poll: %+v", got)
	}
	res := notStarted("agent-a")
	res.Audit = []actionapi.AuditEvent{{Type: "rollback_failed", At: time.Now(), Message: "stopped"}}
	var refusal struct{ Error, Field string }
	if code := s.call(http.MethodPost, actionsPath+"/"+id, euToken, res, &refusal); code != http.StatusBadRequest || refusal.Field != "audit" {
		t.Errorf("not_started with an audit event: %d %+v; want 400 on audit", code, refusal)
	}
	if st := s.action(id); st.State != clusteractions.StateClaimed {
		t.Errorf("the action is %s; want it still claimed", st.State)
	}
}
