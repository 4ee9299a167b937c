package rollbackflow_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/rollbackflow"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// POST /api/v1/rollbacks on the real server: the pull request in the GitOps
// repository in eight calls on a cold base cache (two reads of the base, then
// blob, tree, commit, ref, pull request, label), the rollback release
// record, a second request
// that opens nothing new, and the reducer marking r3 rolled-back once the
// rollback release is healthy.
func TestRollbackThroughTheAPI(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		body := `{"app":"checkout","environment":"prod","reason":"r3 leaks memory"}`
		status, out := s.Do("POST", "/api/v1/rollbacks", "application/json", []byte(body))
		if status != 202 {
			t.Fatalf("POST /api/v1/rollbacks = %d %s", status, out)
		}
		var acc rollbackflow.Accepted
		if err := json.Unmarshal(out, &acc); err != nil {
			t.Fatal(err)
		}
		if acc.RollbackOf != "r3:prod-eu/prod" || acc.TargetReleaseID != "r2:prod-eu/prod" || !acc.Eligible || acc.Duplicate {
			t.Errorf("answer = %+v, want r3 rolled back to eligible r2", acc)
		}
		rec := s.waitRelease(acc.ReleaseID)
		s.Settle(jobKinds...)
		logCalls(t, s)

		calls := s.gitopsCalls()
		t.Logf("cold base cache: rollback pull request in %d GitHub calls (config cached; installation token aside)", len(calls))
		want := append(append([]string(nil), coldBaseCalls...), warmBaseCalls...)
		if !reflect.DeepEqual(calls, want) {
			t.Errorf("calls to %s:\n  %s\nwant:\n  %s", gitops, strings.Join(calls, "\n  "), strings.Join(want, "\n  "))
		}

		wantRec := records.Record{ReleaseID: acc.ReleaseID, App: "checkout", Environment: "prod", Cluster: "prod-eu",
			Repository: appRepo, Kind: records.KindRollback, RollbackOf: "r3:prod-eu/prod", RollbackReason: "r3 leaks memory",
			Image: image(2), Digest: digest(2), GitRevision: sha(2), ConfigRevision: s.configHead, State: records.StateOpened}
		got := rec
		got.PRURL, got.PRNumber, got.CreatedAt, got.UpdatedAt = "", 0, wantRec.CreatedAt, wantRec.UpdatedAt
		if !reflect.DeepEqual(got, wantRec) {
			t.Errorf("rollback record:\n got %+v\nwant %+v", got, wantRec)
		}

		checkPullRequest(t, s, rec, "r3 leaks memory")
		// The rollback release's start job stops a rollout in waves of r3,
		// were one running (app/rolloutflow's tests show the stop itself).
		if !startQueued(t, s, acc.ReleaseID) {
			t.Errorf("no rollout_start job for the rollback release %s", acc.ReleaseID)
		}

		// A second request for the same rollback opens nothing new.
		status, out = s.Do("POST", "/api/v1/rollbacks", "application/json", []byte(`{"app":"checkout","environment":"prod","reason":"again"}`))
		var again rollbackflow.Accepted
		_ = json.Unmarshal(out, &again)
		if status != 202 || !again.Duplicate || again.ReleaseID != acc.ReleaseID {
			t.Errorf("second POST = %d %+v, want 202, the same release, duplicate", status, again)
		}
		s.Settle(jobKinds...)
		if prs := s.GitHub.PullRequests(gitops); len(prs) != 1 {
			t.Errorf("pull requests after a second request = %d, want 1", len(prs))
		}

		// The rollback is merged and deployed: its release becomes healthy,
		// and the reducer marks r3 rolled-back by it.
		s.fact(7100, "success", acc.ReleaseID, "", "")
		r3, _ := s.release("r3:prod-eu/prod")
		if r3.State != records.StateRolledBack || r3.RolledBackBy != acc.ReleaseID {
			t.Errorf("r3 = %s rolled back by %q, want rolled-back by %s", r3.State, r3.RolledBackBy, acc.ReleaseID)
		}
		if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE type = 'rollback_completed' AND release_id = $1`, acc.ReleaseID); n != 1 {
			t.Errorf("rollback_completed events = %d, want 1", n)
		}
	})
}

// A refused request names why, and queues nothing.
func TestRollbackAPIRefusals(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.Install("acme/billing") // without a config, nor one in acme/.github
		cases := []struct{ name, body, field, msg string }{
			{"missing reason", `{"app":"checkout","environment":"prod"}`, "reason", "reason is required"},
			{"unknown field", `{"app":"checkout","environment":"prod","reason":"x","force":true}`, "force", "unknown field"},
			{"unknown environment", `{"app":"checkout","environment":"qa","reason":"x","repository":"acme/checkout"}`, "", `no app "checkout" with environment "qa"`},
			{"named release of nowhere", `{"app":"checkout","environment":"prod","reason":"x","to":"r9:prod-eu/prod"}`, "", `no release "r9:prod-eu/prod"`},
			{"named release running now", `{"app":"checkout","environment":"prod","reason":"x","to":"r3:prod-eu/prod"}`, "", "is the one running now"},
			// The API and `ripcord rollback` share this answer: it names the
			// body's field and the command's flag.
			{"repository unknown", `{"app":"billing","environment":"prod","reason":"x"}`, "repository",
				`pass the app's repository (owner/name) as "repository" in the request body, or --repository to ripcord rollback`},
			// The repository asked about is the one to add the file to; the
			// organisation's is where ripcord looked next.
			{"no config", `{"app":"billing","environment":"prod","reason":"x","repository":"acme/billing"}`, ".github/ripcord.yml",
				"no .github/ripcord.yml in acme/billing, nor in its organisation's acme/.github repository"},
		}
		for _, c := range cases {
			status, out := s.Do("POST", "/api/v1/rollbacks", "application/json", []byte(c.body))
			var e struct{ Error, Field string }
			_ = json.Unmarshal(out, &e)
			if status/100 != 4 || e.Field != c.field || !strings.Contains(e.Error, c.msg) {
				t.Errorf("%s: %d %s, want 4xx on field %q saying %q", c.name, status, out, c.field, c.msg)
			}
		}
		if n := s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'rollback_pull_request'`); n != 0 {
			t.Errorf("refused requests queued %d jobs", n)
		}
	})
}
