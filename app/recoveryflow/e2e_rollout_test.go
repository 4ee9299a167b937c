package recoveryflow_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/internal/testdb"
)

// rolloutConfig is repoConfig's staging rolled out in waves: deploy.yml is
// both a workflow whose failures recovery handles and the rollout's batch
// workflow.
const rolloutConfig = `version: 1
apps:
  checkout:
    environments:
      staging:
        cluster: staging-eu
        workflows: [deploy.yml]
        rollback: {mode: workflow, workflow: deploy.yml, input: version}
        targets:
          - {host: eu1-a-01, labels: {region: eu-1, az: eu-1a}}
        rollout:
          waves:
            - {name: all, select: "region=eu-1"}
recovery:
  max_retries: 3
  initial_backoff: 1ms
`

// A failed batch of a rollout is the rollout's to judge (on_failure):
// recovery neither re-runs it nor opens an episode for it.
func TestRecoveryLeavesARolloutsFailedBatchAlone(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL, rolloutConfig, app.Options{})
		code, body := s.Do("POST", "/api/v1/releases", "application/json", []byte(`{"release_id": "r1:staging-eu/staging",
			"app": "checkout", "environment": "staging", "cluster": "staging-eu", "repository": "`+repo+`", "image": "v1",
			"git_revision": "`+s.sha+`"}`))
		if code != http.StatusCreated {
			t.Fatalf("POST release answered %d: %s", code, body)
		}
		s.WaitFor("the rollout's batch", wait, func() bool { return len(s.GitHub.Dispatches(repo)) == 1 })
		batch := s.GitHub.Dispatches(repo)[0]
		s.WaitFor("the batch's run id", wait, func() bool {
			return s.Int(`SELECT COUNT(*) FROM rollout_batches WHERE run_id = $1`, batch.RunID) == 1
		})
		s.GitHub.CompleteRun(repo, batch.RunID, "failure")
		s.deliverRun(batch.RunID, 1, "failure")
		var st rolloutflow.StatusJSON
		s.WaitFor("the rollout to fail", wait, func() bool {
			_, b := s.Do("GET", "/api/v1/rollouts?release_id="+url.QueryEscape("r1:staging-eu/staging"), "", nil)
			var out struct{ Rollouts []rolloutflow.StatusJSON }
			_ = json.Unmarshal(b, &out)
			if len(out.Rollouts) == 1 {
				st = out.Rollouts[0]
			}
			return st.Rollout.Status == rolloutflow.Failed
		})
		s.Settle(jobKinds...)
		if n := s.reruns(); n != 0 {
			t.Errorf("recovery re-ran the rollout's batch %d times", n)
		}
		if got := s.state(batch.RunID); got != "" {
			t.Errorf("recovery opened an episode (%s) for the rollout's batch", got)
		}
	})
}
