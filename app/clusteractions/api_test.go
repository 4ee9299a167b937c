package clusteractions_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/clusteractions"
	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

const actionsPath = "/api/v1/clusters/prod-eu/actions"

func rollback(release string) clusteractions.Action {
	return clusteractions.Action{Cluster: "prod-eu", Kind: actionapi.KindRollback, Namespace: "shop", Deployment: "checkout",
		TargetVersion: "v1", FailedVersion: "v2", ReleaseID: release, RollbackOf: "c2:prod-eu/prod", Reason: "retries exhausted"}
}

func poll(s *server, agent, extra string) ([]actionapi.Action, int) {
	var out actionapi.Actions
	code := s.call(http.MethodGet, actionsPath+"?agent="+agent+extra, euToken, nil, &out)
	return out.Actions, code
}

func done(agent string) actionapi.Result {
	return actionapi.Result{Agent: agent, Status: actionapi.StatusDone, Outcome: actionapi.OutcomeRolledBack,
		RunningVersion: "v2", TargetVersion: "v1", Audit: []actionapi.AuditEvent{
			{Type: "rollback_initiated", At: time.Now(), Message: "rolling back", Data: map[string]any{"running_version": "v2"}},
			{Type: "health_check_passed", At: time.Now(), Message: "1 of 1"},
			{Type: "rollback_completed", At: time.Now(), Message: "done"}}}
}

func TestAnActionIsHandedToOneAgentAndFinishedOnce(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := startServer(t, dbURL)
		id := s.enqueue(rollback("rb1:prod-eu/prod"))

		got, code := poll(s, "agent-a", "")
		if code != http.StatusOK || len(got) != 1 || got[0].ID != id || got[0].FailedVersion != "v2" || got[0].ReleaseID != "rb1:prod-eu/prod" {
			t.Fatalf("agent a's poll: %d %+v", code, got)
		}
		if st := s.action(id); st.State != clusteractions.StateClaimed || st.Agent != "agent-a" {
			t.Errorf("after the poll the action is %s by %q, want claimed by agent-a", st.State, st.Agent)
		}
		if again, _ := poll(s, "agent-b", ""); len(again) != 0 {
			t.Errorf("a second agent got %+v: the action would run twice", again)
		}
		if again, _ := poll(s, "agent-a", ""); len(again) != 0 {
			t.Errorf("a plain poll handed the claimed action out again: %+v", again)
		}
		if again, _ := poll(s, "agent-a", "&resume=true"); len(again) != 1 || again[0].ID != id {
			t.Errorf("agent a's resume poll got %+v, want its claimed action back", again)
		}

		s.refused(id, done("agent-b"), "claimed by agent agent-a", "another agent's result")
		var ans struct {
			State  string
			Repeat bool
		}
		if code := s.call(http.MethodPost, actionsPath+"/"+id, euToken, done("agent-a"), &ans); code != http.StatusOK || ans.State != "done" || ans.Repeat {
			t.Fatalf("result: %d %+v", code, ans)
		}
		if code := s.call(http.MethodPost, actionsPath+"/"+id, euToken, done("agent-a"), &ans); code != http.StatusOK || !ans.Repeat {
			t.Errorf("the same result again (a lost answer): %d %+v, want 200 repeat", code, ans)
		}
		failedNow := done("agent-a")
		failedNow.Status, failedNow.Outcome = actionapi.StatusFailed, actionapi.OutcomeRollbackFailed
		if code := s.call(http.MethodPost, actionsPath+"/"+id, euToken, failedNow, nil); code != http.StatusConflict {
			t.Errorf("a different result after done: %d, want 409", code)
		}

		st := s.action(id)
		if st.State != clusteractions.StateDone || st.Result == nil || st.Result.TargetVersion != "v1" || st.FinishedAt == nil {
			t.Errorf("stored %+v", st)
		}
		var types []string
		for _, e := range s.audit("c2:prod-eu/prod") {
			types = append(types, string(e.Type))
			if e.Data["action_id"] != id || e.Data["rollback_release_id"] != "rb1:prod-eu/prod" {
				t.Errorf("audit event %s data %v", e.Type, e.Data)
			}
		}
		if strings.Join(types, " ") != "rollback_initiated health_check_passed rollback_completed" {
			t.Errorf("audit of the failed release: %v (written once, not per repeat)", types)
		}
	})
}

func TestActionsNeedTheClustersOwnToken(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := startServer(t, dbURL)
		id := s.enqueue(rollback("rb1:prod-eu/prod"))
		for name, tc := range map[string]struct {
			token string
			want  int
		}{"no cluster's token": {"nope", http.StatusUnauthorized}, "another cluster's token": {usToken, http.StatusForbidden}} {
			if code := s.call(http.MethodGet, actionsPath+"?agent=a", tc.token, nil, nil); code != tc.want {
				t.Errorf("%s: poll answered %d, want %d", name, code, tc.want)
			}
			if code := s.call(http.MethodPost, actionsPath+"/"+id, tc.token, done("a"), nil); code != tc.want {
				t.Errorf("%s: result answered %d, want %d", name, code, tc.want)
			}
		}
		var other actionapi.Actions
		if code := s.call(http.MethodGet, "/api/v1/clusters/prod-us/actions?agent=a", usToken, nil, &other); code != 200 || len(other.Actions) != 0 {
			t.Errorf("prod-us's agent got prod-eu's action: %d %+v", code, other.Actions)
		}
		if st := s.action(id); st.State != clusteractions.StatePending {
			t.Errorf("refused requests changed the action: %s", st.State)
		}
	})
}

func TestALongPollReturnsAnActionQueuedWhileItWaits(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := startServer(t, dbURL)
		type answer struct {
			actions []actionapi.Action
			code    int
		}
		got := make(chan answer, 1)
		go func() {
			a, code := poll(s, "agent-a", "&wait=20s")
			got <- answer{a, code}
		}()
		time.Sleep(300 * time.Millisecond) // the poll is waiting on the server
		id := s.enqueue(rollback("rb1:prod-eu/prod"))
		a := <-got
		if a.code != http.StatusOK || len(a.actions) != 1 || a.actions[0].ID != id {
			t.Errorf("long poll answered %d %+v, want the action queued while it waited", a.code, a.actions)
		}
	})
}

func TestBadResultsAreRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := startServer(t, dbURL)
		id := s.enqueue(rollback("rb1:prod-eu/prod"))
		poll(s, "agent-a", "")
		unknownType := done("agent-a")
		unknownType.Audit[1].Type = "health_checked"
		mismatch := done("agent-a")
		mismatch.Status = actionapi.StatusFailed
		for name, tc := range map[string]struct {
			res   actionapi.Result
			field string
		}{
			"unknown audit type":                  {unknownType, "audit[1].type"},
			"status that contradicts the outcome": {mismatch, "status"},
			"no agent":                            {actionapi.Result{Status: "done", Outcome: "rolled_back"}, "agent"},
		} {
			var e struct{ Error, Field string }
			if code := s.call(http.MethodPost, actionsPath+"/"+id, euToken, tc.res, &e); code != http.StatusBadRequest || e.Field != tc.field {
				t.Errorf("%s: %d field %q (%s), want 400 naming %s", name, code, e.Field, e.Error, tc.field)
			}
		}
		if st := s.action(id); st.State != clusteractions.StateClaimed || len(s.audit("c2:prod-eu/prod")) != 0 {
			t.Errorf("a refused result changed the action (%s) or wrote audit events", st.State)
		}
		if code := s.call(http.MethodPost, actionsPath+"/act_nope", euToken, done("agent-a"), nil); code != http.StatusNotFound {
			t.Errorf("result for an unknown action: %d, want 404", code)
		}
	})
}

func TestEnqueueIsIdempotentUnderTheRollbackReleaseID(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := startServer(t, dbURL)
		a, b := s.enqueue(rollback("rb1:prod-eu/prod")), s.enqueue(rollback("rb1:prod-eu/prod"))
		c := s.enqueue(rollback("rb2:prod-eu/prod"))
		if a != b || a == c {
			t.Errorf("ids %s %s %s; want the same rollback release queued once, another one apart", a, b, c)
		}
		got, _ := poll(s, "agent-a", "")
		if len(got) != 2 {
			t.Errorf("the agent got %d actions, want 2", len(got))
		}
	})
}

func TestEnqueueNamesEveryBadField(t *testing.T) {
	t.Parallel()
	bad := clusteractions.Action{Cluster: "", Kind: "restart", Namespace: "Shop_NS", Deployment: "checkout",
		FailedVersion: "", TargetVersion: "v1/x"}
	err := bad.Validate()
	var fe *records.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("Validate = %v, want field errors", err)
	}
	for _, field := range []string{"cluster", "kind", "namespace", "failed_version", "target_version"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("the error does not name %s: %v", field, err)
		}
	}
	if err := rollback("r").Validate(); err != nil {
		t.Errorf("a good action: %v", err)
	}
}

func TestEnqueueRefusesARollbackWithoutATargetVersion(t *testing.T) {
	t.Parallel()
	a := rollback("r")
	a.TargetVersion = ""
	if err := a.Validate(); err == nil || !strings.Contains(err.Error(), "target_version") {
		t.Errorf("Validate = %v; want target_version required, so that no agent picks the version itself", err)
	}
}
