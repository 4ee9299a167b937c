package recoveryflow_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// Two `ripcord serve` replicas on one PostgreSQL database, behind a load
// balancer (README, "Running more than one replica"). They start at the
// same moment, both migrating the fresh database.
func replicas(t *testing.T) (*scene, *e2etest.Env) {
	t.Helper()
	envs := e2etest.StartReplicas(t, testdb.URL(t, "postgres"), app.Options{}, 2)
	a, b := envs[0], envs[1]
	s := &scene{Env: a, sha: a.GitHub.PutFile(repo, "main", ".github/ripcord.yml", repoConfig(3, "1ms"))}
	a.Install(repo)
	a.CheckRequestsAtCleanup(t)
	return s, b
}

// GitHub may send one delivery to both replicas at once (a redelivery
// racing the original, a load balancer retrying on the other replica):
// each failed deploy run's workflow_run is posted twice to each replica,
// all at once, under one X-GitHub-Delivery. Each is stored once, answered
// queued once and duplicate otherwise, and decided once: one re-run per
// failed run, though both replicas drain the one table.
func TestReplicasProcessADeliveryPostedToBothOnce(t *testing.T) {
	t.Parallel()
	s, b := replicas(t)
	const runs = 12
	var reqs []*http.Request
	ids := make([]string, runs)
	for i := range runs {
		run := int64(7001 + i)
		s.failedRun(run)
		s.fact(run, 1, "failed", "health_check_failure", fmt.Sprintf("checkout-%d", run), "v2")
		body := s.WorkflowRun(runPayload(s, run, 1, "failure"))
		ids[i] = githubtest.NewGUID(t)
		for _, url := range []string{s.URL, b.URL, s.URL, b.URL} {
			req := githubtest.NewDelivery(t, url+"/api/github/hook", e2etest.Secret, "workflow_run", body)
			req.Header.Set("X-GitHub-Delivery", ids[i])
			reqs = append(reqs, req)
		}
	}

	answers := map[string]map[string]int{} // delivery -> status -> count
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			status, err := post(req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			id := req.Header.Get("X-GitHub-Delivery")
			if answers[id] == nil {
				answers[id] = map[string]int{}
			}
			answers[id][status]++
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	for _, id := range ids {
		if got := answers[id]; got["queued"] != 1 || got["duplicate"] != 3 {
			t.Errorf("delivery %s was answered %v, want queued once and duplicate three times", id, got)
		}
	}

	for i := range runs {
		s.waitState(int64(7001+i), recoveryflow.StateRetrying)
	}
	s.Settle(jobKinds...)
	if got := s.reruns(); got != runs {
		t.Errorf("re-runs = %d, want %d: one per failed run", got, runs)
	}
	for _, id := range ids {
		if n := s.Int(`SELECT COUNT(*) FROM deliveries WHERE id = $1`, id); n != 1 {
			t.Errorf("delivery %s stored %d times, want once", id, n)
		}
		if n := s.Int(`SELECT processed_count FROM deliveries WHERE id = $1`, id); n != 1 {
			t.Errorf("delivery %s processed %d times, want once", id, n)
		}
	}
}

// post sends a delivery and returns the status of its answer.
func post(req *http.Request) (string, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("post delivery: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("delivery answered %d: %s", resp.StatusCode, b)
	}
	var ack struct{ Status string }
	if err := json.Unmarshal(b, &ack); err != nil {
		return "", fmt.Errorf("delivery answer %s: %w", b, err)
	}
	return ack.Status, nil
}

// periodicKinds are the server's periodic jobs (app/effects.go).
var periodicKinds = []string{"records_sweep", "deliveries_sweep", "stall_scan", "recovery_rerun_sweep", "recovery_retention_sweep",
	"cluster_actions_expiry_sweep"}

// Every periodic job runs on start (RunOnStart) and then at its interval;
// with two replicas only the one leading the job queue inserts them, so
// each sweep runs once for the pair, not once per replica, and the work it
// does is done once: a scheduled retry that nobody carried out is alerted
// in one issue.
func TestReplicasRunAPeriodicSweepOnce(t *testing.T) {
	t.Parallel()
	s, b := replicas(t)
	const run = 7101
	s.retrying(run)
	s.Settle(jobKinds...)
	// The re-run job ended without moving the episode on, which leaves it
	// waiting in retry_scheduled an hour past its retry (sweep.go).
	s.Exec(`UPDATE episodes SET state = $1, next_retry_at = (EXTRACT(EPOCH FROM now()) * 1000000)::bigint - 3600000000
		WHERE repository = $2 AND run_id = $3`, string(recoveryflow.StateRetryScheduled), repo, int64(run))
	s.waitPeriodic(1)

	// Both replicas restart together, as after a rollout: the sweeps run
	// on start once more, for the pair.
	s.Stop()
	b.Stop()
	e2etest.StartAll(t, s.Env, b)
	s.waitPeriodic(2)
	s.WaitFor("the lost retry's alert", wait, func() bool { return len(s.GitHub.Issues(repo)) >= 1 })
	s.Settle(append(jobKinds, periodicKinds...)...)
	for _, kind := range periodicKinds {
		if kind == "stall_scan" {
			continue // its interval is a minute, which a slow run of this test may reach
		}
		if n := s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = $1`, kind); n != 2 {
			t.Errorf("%s jobs = %d, want 2: one per start of the pair, inserted by its leader", kind, n)
		}
	}
	if n := len(s.GitHub.Issues(repo)); n != 1 {
		t.Errorf("issues = %d, want one alert for the lost retry", n)
	}
	if st := s.state(run); st != string(recoveryflow.StateAlerted) {
		t.Errorf("episode %d is %s, want %s", run, st, recoveryflow.StateAlerted)
	}
}

// waitPeriodic waits until each periodic job has been inserted n times
// and none is waiting or running.
func (s *scene) waitPeriodic(n int) {
	s.T.Helper()
	s.WaitFor(fmt.Sprintf("%d of each periodic job", n), wait, func() bool {
		for _, kind := range periodicKinds {
			if s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = $1`, kind) < n {
				return false
			}
		}
		return true
	})
	s.Settle(periodicKinds...)
}
