package rolloutflow_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// noApprovalConfig is e2eConfig without the approval after the canary:
// the rollout goes through both waves on its own.
var noApprovalConfig = strings.Replace(e2eConfig, "          approvals_between: [canary]\n", "", 1)

// cdeventSink is a CDEvent sink on loopback that keeps what it receives.
type cdeventSink struct {
	mu     sync.Mutex
	bodies []string
	srv    *httptest.Server
}

func newCDEventSink(t *testing.T) *cdeventSink {
	k := &cdeventSink{}
	k.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		k.mu.Lock()
		k.bodies = append(k.bodies, string(b))
		k.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(k.srv.Close)
	return k
}

// count is how many events received mention all of words.
func (k *cdeventSink) count(words ...string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, b := range k.bodies {
		all := true
		for _, w := range words {
			all = all && strings.Contains(b, w)
		}
		if all {
			n++
		}
	}
	return n
}

// startWithSink is startOn with CDEvents sent to sink.
func startWithSink(t *testing.T, dbURL, cfg string, sink *cdeventSink) *e2etest.Env {
	t.Helper()
	e := e2etest.StartWith(t, dbURL, app.Options{}, func(c *config.Config) { c.CDEventSinks = []string{sink.srv.URL} })
	e.CheckRequestsAtCleanup(t)
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", cfg)
	e.GitHub.SetPermission(repo, "bob", "write")
	e.Install(repo)
	return e
}

func (s *scene) record(id string) records.Record {
	s.T.Helper()
	code, body := s.Do("GET", "/api/v1/releases/"+url.PathEscape(id), "", nil)
	if code != http.StatusOK {
		s.T.Fatalf("GET release %s answered %d: %s", id, code, body)
	}
	var rec records.Record
	if err := json.Unmarshal(body, &rec); err != nil {
		s.T.Fatal(err)
	}
	return rec
}

// rolloutOf waits for the rollout of release and names it in s.
func (s *scene) rolloutOf(release string) {
	s.T.Helper()
	s.id = ""
	s.WaitFor("the rollout of "+release, wait, func() bool {
		_, b := s.Do("GET", "/api/v1/rollouts?release_id="+url.QueryEscape(release), "", nil)
		var out struct{ Rollouts []rolloutflow.StatusJSON }
		_ = json.Unmarshal(b, &out)
		if len(out.Rollouts) == 1 {
			s.id = out.Rollouts[0].ID
		}
		return s.id != ""
	})
}

// A rollout in waves that succeeds reports its release healthy (every
// batch deployed, every gate between waves passed), though the deploy
// workflow sent no fact: the record is healthy with healthy_at, the
// eligibility check counts it, and the report goes through the facts'
// own path, once: the job run again, or the deploy workflow posting the
// same run's success with the bundled action, changes nothing.
func TestASucceededRolloutReportsItsReleaseHealthy(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, succeededRolloutIsHealthy)
}

func succeededRolloutIsHealthy(t *testing.T, dbURL string) {
	sink := newCDEventSink(t)
	e := startWithSink(t, dbURL, noApprovalConfig, sink)
	const release, image = "r1:prod-eu/prod", "ghcr.io/acme/checkout:v1"
	s := &scene{Env: e, id: openRollout(e, release, image)}
	s.finish(1)
	s.finish(2)
	e.WaitFor("the rollout to succeed", wait, func() bool { return s.status().Rollout.Status == rolloutflow.Succeeded })
	e.WaitFor("the release to be healthy", wait, func() bool { return s.record(release).State == records.StateHealthy })
	rec := s.record(release)
	if rec.HealthyAt == nil {
		t.Fatalf("release %s is healthy without healthy_at", release)
	}
	code, body := s.Do("GET", "/api/v1/eligibility?app=checkout&environment=prod&cluster=prod-eu&image="+url.QueryEscape(image), "", nil)
	var el struct {
		Eligible bool
		Reason   string
	}
	if err := json.Unmarshal(body, &el); err != nil || code != http.StatusOK || !el.Eligible {
		t.Errorf("eligibility of %s after its rollout succeeded: %d %s, want eligible", image, code, body)
	}
	s.settle()
	healthyJob := rolloutflow.HealthyArgs{}.Kind()
	if n := s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = $1 AND state = 'completed'`, healthyJob); n != 1 {
		t.Fatalf("%d completed %s jobs, want 1", n, healthyJob)
	}

	// The job run again (a worker that died after its commit) ...
	db, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Write.Exec(`UPDATE river_job SET state = 'available', finalized_at = NULL WHERE kind = $1`, healthyJob); err != nil {
		t.Fatal(err)
	}
	s.WaitFor("the job's second run", wait, func() bool {
		return s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = $1 AND state = 'completed' AND attempt = 2`, healthyJob) == 1
	})
	// ... and the deploy workflow's own report of the last batch's run.
	last := s.GitHub.Dispatches(repo)[1]
	s.Fact(map[string]any{"source": "task", "repository": repo, "workflow_run_id": last.RunID, "run_attempt": 1,
		"status": "success", "app": "checkout", "environment": "prod", "cluster": "prod-eu",
		"release_id": release, "version": image, "observed_at": time.Now().UTC().Format(time.RFC3339Nano)})
	s.settle()
	if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE release_id = $1 AND type = 'state_changed'`, release); n != 1 {
		t.Errorf("%d state changes of %s, want 1 (opened -> healthy)", n, release)
	}
	// The workflow's fact has the id of the rollout's: a repeat, applied
	// once (a second fact would be received, and audited, again).
	if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE release_id = $1 AND type = 'fact_received'`, release); n != 1 {
		t.Errorf("%d facts received about %s, want 1 (the rollout's; the workflow's is the same fact)", n, release)
	}
	if again := s.record(release); again.State != records.StateHealthy || again.HealthyAt == nil || !again.HealthyAt.Equal(*rec.HealthyAt) {
		t.Errorf("release after the repeats: %s, healthy_at %v; want healthy since %v", again.State, again.HealthyAt, rec.HealthyAt)
	}
	e.WaitFor("the CDEvent", wait, func() bool { return sink.count(release) >= 1 })
	time.Sleep(300 * time.Millisecond)
	if n := sink.count(release); n != 1 {
		t.Errorf("%d CDEvents about %s, want 1 (service deployed)", n, release)
	}
	if n := sink.count(release, "service.deployed"); n != 1 {
		t.Errorf("%d service.deployed CDEvents about %s, want 1", n, release)
	}
}

// A rollback release rolled out in waves (its pull request merged in an
// environment with rollout:) completes the rollback when its rollout
// succeeds: it is healthy, and the release it takes back is rolled-back,
// marked through the reducer as any healthy rollback marks it.
func TestASucceededRollbackRolloutMarksTheReleaseRolledBack(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, rollbackRolloutRollsBack)
}

func rollbackRolloutRollsBack(t *testing.T, dbURL string) {
	sink := newCDEventSink(t)
	cfg := strings.Replace(noApprovalConfig, "        targets:", `        rollback:
          mode: pull-request
          file: deploy/prod.yaml
          fields: {image: image}
        targets:`, 1)
	e := startWithSink(t, dbURL, cfg, sink)
	const r2, rollback = "r2:prod-eu/prod", "rb1:prod-eu/prod"
	s := &scene{Env: e, id: openRollout(e, r2, "ghcr.io/acme/checkout:v2")}
	s.finish(1)
	s.finish(2)
	e.WaitFor("r2 to be healthy", wait, func() bool { return s.record(r2).State == records.StateHealthy })

	base := s.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: ghcr.io/acme/checkout:v2\n")
	merge := s.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: ghcr.io/acme/checkout:v1\n")
	code, b := s.Do("POST", "/api/v1/releases", "application/json", []byte(`{"release_id": "`+rollback+`",
		"app": "checkout", "environment": "prod", "cluster": "prod-eu", "repository": "acme/checkout",
		"image": "ghcr.io/acme/checkout:v1", "git_revision": "`+headSHA+`", "kind": "rollback",
		"rollback_of": "`+r2+`", "rollback_reason": "v2 leaks memory",
		"pr": {"url": "https://github.com/acme/checkout/pull/7", "number": 7}}`))
	if code != http.StatusCreated {
		t.Fatalf("POST rollback release answered %d: %s", code, b)
	}
	s.settle()
	s.Deliver("pull_request", mergedPullRequest(t, base, merge, func(pr map[string]any) {
		pr["html_url"] = "https://github.com/acme/checkout/pull/7"
	}))
	s.rolloutOf(rollback)
	s.finish(3)
	s.finish(4)
	e.WaitFor("the rollback's rollout to succeed", wait, func() bool { return s.status().Rollout.Status == rolloutflow.Succeeded })
	e.WaitFor("the rollback to be healthy", wait, func() bool { return s.record(rollback).State == records.StateHealthy })
	if rec := s.record(r2); rec.State != records.StateRolledBack || rec.RolledBackBy != rollback {
		t.Errorf("r2 after its rollback's rollout succeeded: %s, rolled back by %q; want rolled-back by %s", rec.State, rec.RolledBackBy, rollback)
	}
	if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE release_id = $1 AND type = 'rollback_completed'`, rollback); n != 1 {
		t.Errorf("%d rollback_completed events of %s, want 1", n, rollback)
	}
	e.WaitFor("the rolled-back CDEvent", wait, func() bool { return sink.count(rollback, "service.rolledback") == 1 })
}
