package rolloutflow_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// suspendable has the fake GitHub say of the App's installation what
// GitHub says while it is suspended: suspended_at set on the installation,
// and no token for it (403).
func suspendable(e *e2etest.Env) *atomic.Bool {
	var suspended atomic.Bool
	get := "GET /app/installations/{installation_id}"
	installation := e.GitHub.Default(get)
	e.GitHub.Handle(get, func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		rec := httptest.NewRecorder()
		installation(rec, r, p)
		var m map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
			e.T.Errorf("installation as the fake GitHub has it: %v", err)
		}
		m["suspended_at"] = nil
		if suspended.Load() {
			m["suspended_at"] = "2026-12-01T09:00:00Z"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(m)
	})
	create := "POST /app/installations/{installation_id}/access_tokens"
	token := e.GitHub.Default(create)
	e.GitHub.Handle(create, func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		if !suspended.Load() {
			token(w, r, p)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": "This installation has been suspended",
			"documentation_url": "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app"})
	})
	return &suspended
}

// deliverSuspension delivers the installation event action (suspend or
// unsuspend) of the App's installation and waits until it is applied.
func deliverSuspension(e *e2etest.Env, action string) {
	e.T.Helper()
	e.Deliver("installation", e2etest.Edit(e.T, githubtest.LoadPayload(e.T, "installation", action+".payload.json"), func(m map[string]any) {
		m["installation"].(map[string]any)["id"] = githubtest.InstallationID
	}))
	want := 0
	if action == "suspend" {
		want = 1
	}
	e.WaitFor("the "+action+" to be applied", wait, func() bool {
		return e.Int(`SELECT COUNT(*) FROM installations WHERE id = $1 AND suspended`, githubtest.InstallationID) == want
	})
}

// A rollout whose installation is suspended while its canary's batch runs
// waits: the run's end, delivered late, moves it no further, its tick
// asks GitHub nothing and spends no attempt (it snoozes), and its status
// (GET and the list) says it is paused by the suspension, not ended. Once
// the installation is unsuspended it goes on where it was: it waits for
// the approval after the canary, shown on its check run.
func TestARolloutOfASuspendedInstallationWaitsForTheUnsuspend(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		e := startOn(t, dbURL, e2eConfig, "write")
		suspended := suspendable(e)
		s := &scene{Env: e, id: openRollout(e, "r1:prod-eu/prod", "v1")}
		e.WaitFor("the canary's dispatch", wait, func() bool { return len(e.GitHub.Dispatches(repo)) == 1 })
		s.settle()

		suspended.Store(true)
		deliverSuspension(e, "suspend")
		before := len(rolloutCalls(e.GitHub))
		s.finish(1) // delivered late: GitHub sends no event of a suspended installation
		s.settle()

		if calls := rolloutCalls(e.GitHub); len(calls) != before {
			t.Errorf("GitHub was asked for the rollout while its installation is suspended: %q", calls[before:])
		}
		snoozed := 0
		for _, kind := range []string{"rollout_tick", "rollout_check"} {
			for _, j := range e.Jobs(kind) {
				if len(j.Errors) > 0 {
					t.Errorf("%s job %d spent an attempt: %+v", kind, j.ID, j.Errors)
				}
				var meta struct{ Snoozes int }
				_ = json.Unmarshal(j.Metadata, &meta)
				snoozed += meta.Snoozes
			}
		}
		if snoozed == 0 {
			t.Error("no tick waited (snoozed) while the installation is suspended")
		}
		why := "the suspension of the App's installation 1"
		st := s.status()
		if st.Rollout.Status != rolloutflow.Running || !strings.HasPrefix(st.Rollout.Paused, why) ||
			!strings.Contains(st.Rollout.Paused, "once the installation is unsuspended") {
			t.Errorf("while suspended: status %s, paused %q; want running, paused by %s until it is unsuspended",
				st.Rollout.Status, st.Rollout.Paused, why)
		}
		_, body := e.Do("GET", "/api/v1/rollouts?app=checkout&environment=prod", "", nil)
		var list struct{ Rollouts []rolloutflow.StatusJSON }
		if err := json.Unmarshal(body, &list); err != nil || len(list.Rollouts) != 1 || !strings.HasPrefix(list.Rollouts[0].Rollout.Paused, why) {
			t.Errorf("the list while suspended: %s; want the rollout paused by %s", body, why)
		}
		code, body := e.Do("POST", "/api/v1/rollouts/"+url.PathEscape(s.id)+"/approve", "application/json", []byte(`{"user": "bob"}`))
		if code != http.StatusConflict || !strings.Contains(string(body), "not waiting for an approval") {
			t.Errorf("approve while suspended answered %d %s, want 409: not waiting for an approval", code, body)
		}

		suspended.Store(false)
		deliverSuspension(e, "unsuspend")
		e.WaitFor("the approval button after the unsuspend", wait, func() bool {
			return s.approveShown() && s.status().Rollout.Status == rolloutflow.PausedApproval
		})
		if st := s.status(); strings.Contains(st.Rollout.Paused, "suspension") {
			t.Errorf("after the unsuspend the status says %q", st.Rollout.Paused)
		}
	})
}
