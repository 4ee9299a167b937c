package clusteractions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/clusteractions"
	"github.com/ripcord/ripcord/app/recoveryflow"
	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/recovery"
)

// episodeK8s is a recovery episode of mode kubernetes that handed its
// rollback to the agent: rolling back, waiting on its rollback release.
type episodeK8s struct {
	runID     int64
	failed    string // the failed release
	rollback  string // the rollback release the action carries
	actionOf  clusteractions.Action
	repoName  string
	createdAt time.Time
}

// seedRollingBack opens the failed and the rollback release through the API
// and stores the episode as the recovery flow leaves it once the kubernetes
// executor queued the action: rolling_back on the rollback release.
// healthyFact posts the Healthy fact of the rollback release's workload
// (uid), as the agent reports a rollout that went well, and waits for the
// episode to end rolled_back by it.
func (e episodeK8s) healthyFact(t *testing.T, s *server, uid string) {
	t.Helper()
	fact := map[string]any{"source": "deployment", "cluster": "prod-eu", "namespace": "shop", "name": "checkout",
		"uid": uid, "generation": 2, "observed_generation": 2, "phase": "Healthy",
		"images": []string{"registry:5000/shop/checkout:v1"}, "release_id": e.rollback,
		"observed_at": time.Now().UTC().Format(time.RFC3339Nano)}
	if code := s.call(http.MethodPost, "/api/v1/facts/prod-eu", euToken, fact, nil); code != http.StatusOK {
		t.Fatalf("post the healthy fact: %d", code)
	}
	deadline := time.Now().Add(waitFor)
	for state, _ := e.read(t, s); state != string(recoveryflow.StateRolledBack); state, _ = e.read(t, s) {
		if time.Now().After(deadline) {
			t.Fatalf("episode is %s, want rolled_back by its release's facts", state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// claimedByAgentA seeds an episode rolling back through an action, and
// has agent-a claim that action.
func claimedByAgentA(t *testing.T, s *server, runID int64) (episodeK8s, string) {
	t.Helper()
	e := seedRollingBack(t, s, runID)
	id := s.enqueue(e.actionOf)
	if got, _ := poll(s, "agent-a", ""); len(got) != 1 || got[0].ID != id {
		t.Fatalf("poll: %+v, want action %s", got, id)
	}
	return e, id
}

// queuedAgo seeds an episode rolling back through an action that no agent
// has claimed, queued age ago.
func queuedAgo(t *testing.T, s *server, runID int64, age time.Duration) (episodeK8s, string) {
	t.Helper()
	e := seedRollingBack(t, s, runID)
	id := s.enqueue(e.actionOf)
	if _, err := s.db.Write.ExecContext(context.Background(), `UPDATE cluster_actions SET created_at = $1 WHERE id = $2`,
		store.Micros(time.Now().Add(-age)), id); err != nil {
		t.Fatal(err)
	}
	return e, id
}

func seedRollingBack(t *testing.T, s *server, runID int64) episodeK8s {
	t.Helper()
	e := episodeK8s{runID: runID, repoName: "acme/checkout", createdAt: time.Now().UTC(),
		failed: fmt.Sprintf("c%d:prod-eu/prod", runID), rollback: fmt.Sprintf("rb%d:prod-eu/prod", runID)}
	for _, body := range []map[string]any{
		{"release_id": e.failed, "app": "checkout", "environment": "prod", "cluster": "prod-eu", "image": "registry:5000/shop/checkout:v2"},
		{"release_id": e.rollback, "app": "checkout", "environment": "prod", "cluster": "prod-eu", "image": "registry:5000/shop/checkout:v1",
			"kind": "rollback", "rollback_of": e.failed, "rollback_reason": "retries exhausted"},
	} {
		var out map[string]any
		if code := s.call(http.MethodPost, "/api/v1/releases", apiToken, body, &out); code != http.StatusCreated {
			t.Fatalf("open release %v: %d %v", body["release_id"], code, out)
		}
	}
	d := recovery.Decision{Action: recovery.ActionRollback, Rule: "rollback-after-retries", Reason: "retries exhausted",
		Target: &recovery.Target{ReleaseID: "c0:prod-eu/prod", Version: "v1"}}
	var c recoveryflow.Context
	c.Config.RollbackMode = "kubernetes"
	decision, _ := json.Marshal(d)
	ctxJSON, _ := json.Marshal(c)
	if _, err := s.db.Write.ExecContext(context.Background(), `INSERT INTO episodes (repository, run_id, installation_id, workflow,
		head_sha, app, environment, cluster, release_id, run_attempt, retry_count, state, decision, context, next_retry_at,
		rollback_run_id, seq, created_at, updated_at, rollback_release_id)
		VALUES ($1, $2, 1, 'deploy', 'abc', 'checkout', 'prod', 'prod-eu', $3, 1, 0, 'rolling_back', $4, $5, NULL, 0, 1, $6, $6, $7)`,
		e.repoName, runID, e.failed, string(decision), string(ctxJSON), store.Micros(e.createdAt), e.rollback); err != nil {
		t.Fatalf("store the episode: %v", err)
	}
	e.actionOf = clusteractions.Action{Cluster: "prod-eu", Kind: actionapi.KindRollback, Namespace: "shop", Deployment: "checkout",
		TargetVersion: "v1", FailedVersion: "v2", ReleaseID: e.rollback, RollbackOf: e.failed, Reason: "retries exhausted"}
	return e
}

// episode reads the episode's state and its decision's reason.
func (e episodeK8s) read(t *testing.T, s *server) (string, recovery.Decision) {
	t.Helper()
	var state, decision string
	if err := s.db.Read.QueryRowContext(context.Background(), `SELECT state, decision FROM episodes WHERE repository = $1 AND run_id = $2`,
		e.repoName, e.runID).Scan(&state, &decision); err != nil {
		t.Fatalf("read episode %d: %v", e.runID, err)
	}
	var d recovery.Decision
	if err := json.Unmarshal([]byte(decision), &d); err != nil {
		t.Fatal(err)
	}
	return state, d
}

// waitEnded waits for the episode to end rollback_failed (alerted by the
// rollback-failed rule) with a reason that says want.
func (e episodeK8s) waitEnded(t *testing.T, s *server, want string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		state, d := e.read(t, s)
		if state == string(recoveryflow.StateAlerted) && d.Rule == recoveryflow.RuleRollbackFailed && strings.Contains(d.Reason, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("episode %d is %s (%s: %q), want rollback_failed saying %q", e.runID, state, d.Rule, d.Reason, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// settledJobs waits until no job of kinds is still to run, so a count
// taken after it is final.
func settledJobs(t *testing.T, s *server, kinds ...string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		var n int
		q := `SELECT COUNT(*) FROM river_job WHERE kind IN ('` + strings.Join(kinds, "','") + `') AND state IN ('available', 'running', 'scheduled', 'pending')`
		if err := s.db.Read.QueryRowContext(context.Background(), q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs of %v still to run", n, kinds)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e episodeK8s) alerts(t *testing.T, s *server) int {
	t.Helper()
	q := `SELECT COUNT(*) FROM river_job WHERE kind = 'recovery_alert' AND json_extract(args, '$.run_id') = $1`
	if s.db.Dialect == store.Postgres {
		q = `SELECT COUNT(*) FROM river_job WHERE kind = 'recovery_alert' AND (args ->> 'run_id')::bigint = $1`
	}
	var n int
	if err := s.db.Read.QueryRowContext(context.Background(), q, e.runID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func failedResult(agent, outcome, errType, reason string) actionapi.Result {
	audit := records.AuditRollbackFailed
	switch outcome {
	case actionapi.OutcomeSkipped:
		audit = records.AuditRollbackSkipped
	case actionapi.OutcomeAlert:
		audit = records.AuditManualInterventionRequired
	}
	return actionapi.Result{Agent: agent, Status: actionapi.StatusFailed, Outcome: outcome, ErrorType: errType, Reason: reason,
		Audit: []actionapi.AuditEvent{{Type: string(audit), At: time.Now(), Message: reason}}}
}

// endedBeforeThePatch are the results of agent-a ending a rollback action
// without having changed the deployment: a skip, an alert, a failure
// before the patch.
func endedBeforeThePatch() []actionapi.Result {
	return []actionapi.Result{
		failedResult("agent-a", actionapi.OutcomeSkipped, "", "checkout runs v3, not the failed v2: nothing to roll back"),
		failedResult("agent-a", actionapi.OutcomeAlert, "pinned_by_digest", "checkout is pinned by digest sha256:abc"),
		failedResult("agent-a", actionapi.OutcomeRollbackFailed, "deployment_not_found", "deployment shop/checkout not found"),
	}
}

// A rollback action the agent ends without rolling back (a skip, an alert,
// a failure before or after the patch) ends its episode at once,
// rollback_failed with the agent's reason, and only once however often the
// agent repeats it; one that rolled back leaves the ending to the rollback
// release's facts.
func TestAnActionsFailureEndsItsEpisodeAtOnceWithTheAgentsReason(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := startServer(t, dbURL)
		cases := append(endedBeforeThePatch(),
			failedResult("agent-a", actionapi.OutcomeRollbackFailed, "health_check_failed", "0 of 2 pods answered /healthz"))
		for i, res := range cases {
			e, id := claimedByAgentA(t, s, int64(100+i))
			s.reportTwice(id, res)
			e.waitEnded(t, s, res.Reason)
			state, d := e.read(t, s)
			if !strings.Contains(d.Reason, id) || (res.ErrorType != "" && !strings.Contains(d.Reason, res.ErrorType)) {
				t.Errorf("episode %s: reason %q does not name action %s and its error type %q", state, d.Reason, id, res.ErrorType)
			}
			settledJobs(t, s, "recovery_rollback_outcome")
			if n := e.alerts(t, s); n != 1 {
				t.Errorf("%s: %d alerts queued, want 1", res.Outcome, n)
			}
		}

		// Rolled back: the release's facts end the episode, not the action.
		e, id := claimedByAgentA(t, s, 200)
		if code := s.call(http.MethodPost, actionsPath+"/"+id, euToken, done("agent-a"), nil); code != http.StatusOK {
			t.Fatalf("report done: %d", code)
		}
		settledJobs(t, s, "recovery_rollback_outcome")
		if state, _ := e.read(t, s); state != string(recoveryflow.StateRollingBack) {
			t.Errorf("after a successful action the episode is %s, want rolling_back until its release's facts", state)
		}
	})
}

// An action no agent took within the claim timeout (not_claimed) ends its
// episode on the poll that expires it, with the expiry's reason, once.
func TestAnActionNoAgentTookEndsItsEpisode(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := startServer(t, dbURL)
		e, _ := queuedAgo(t, s, 300, clusteractions.ClaimTimeout+time.Minute)
		for range 2 {
			if got, code := poll(s, "agent-a", ""); code != http.StatusOK || len(got) != 0 {
				t.Fatalf("poll: %d %+v, want nothing handed out", code, got)
			}
		}
		e.waitEnded(t, s, "no agent of cluster prod-eu took the action")
		if _, d := e.read(t, s); !strings.Contains(d.Reason, "not_claimed") {
			t.Errorf("reason %q does not say not_claimed", d.Reason)
		}
		settledJobs(t, s, "recovery_rollback_outcome")
		if n := e.alerts(t, s); n != 1 {
			t.Errorf("%d alerts queued, want 1", n)
		}
	})
}

// A health check failure the agent reports after the rollback rolled out
// may come when the facts already made the rollback release healthy and
// the episode rolled_back: that episode stays as it is (changing an ended
// recovery is a product decision), but the rollback release's audit log
// says the agent's health check failed, and nobody is alerted.
func TestAHealthCheckFailureAfterTheRollbackReleaseIsHealthyIsRecordedOnIt(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := startServer(t, dbURL)
		e, id := claimedByAgentA(t, s, 400)
		e.healthyFact(t, s, "uid-400")
		res := failedResult("agent-a", actionapi.OutcomeRollbackFailed, "health_check_failed", "0 of 2 pods answered /healthz")
		if code := s.call(http.MethodPost, actionsPath+"/"+id, euToken, res, nil); code != http.StatusOK {
			t.Fatalf("report: %d", code)
		}
		settledJobs(t, s, "recovery_rollback_outcome")
		if state, _ := e.read(t, s); state != string(recoveryflow.StateRolledBack) {
			t.Errorf("episode is %s, want it left rolled_back", state)
		}
		if n := e.alerts(t, s); n != 0 {
			t.Errorf("%d alerts queued for an episode that rolled back, want 0", n)
		}
		var found bool
		for _, ev := range s.audit(e.rollback) {
			if ev.Type == records.AuditRollbackFailed && ev.Data["action_id"] == id && strings.Contains(ev.Message, "health_check_failed") {
				found = true
			}
		}
		if !found {
			t.Errorf("rollback release %s has no rollback_failed event naming action %s: %+v", e.rollback, id, s.audit(e.rollback))
		}
	})
}
