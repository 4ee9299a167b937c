package recoveryflow_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
)

const (
	repo      = "acme/checkout" // the OIDC issuer's default repository
	rerunPath = "/repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs"
	contents  = "/repos/{owner}/{repo}/contents/{path}"
	checkRuns = "/repos/{owner}/{repo}/check-runs"
	// wait bounds how long a failure takes to show: CI shares two cores
	// with the whole suite, and ran these packages up to six times slower.
	wait = 45 * time.Second
)

// repoConfig is a .github/ripcord.yml with one app deployed to staging by
// deploy.yml, rolled back by dispatching deploy.yml with input version.
func repoConfig(maxRetries int, backoff string) string {
	return fmt.Sprintf(`version: 1
apps:
  checkout:
    environments:
      staging:
        cluster: staging-eu
        workflows: [deploy.yml]
        rollback:
          mode: workflow
          workflow: deploy.yml
          input: version
recovery:
  max_retries: %d
  initial_backoff: %s
  multiplier: 2
  max_backoff: 5s
  failure_types:
    build_failure: ["build*"]
`, maxRetries, backoff)
}

// scene is a running server with acme/checkout installed and configured.
type scene struct {
	*e2etest.Env
	sha string // the head of main, where the config is
}

func newScene(t *testing.T, dbURL, config string, opts app.Options) *scene {
	t.Helper()
	e := e2etest.Start(t, dbURL, opts)
	s := &scene{Env: e, sha: e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", config)}
	e.Install(repo)
	e.CheckRequestsAtCleanup(t)
	return s
}

// fact posts the task fact the bundled action posts in a deploy run.
func (s *scene) fact(runID int64, attempt int, status, failureType, release, version string) {
	s.T.Helper()
	f := map[string]any{"source": "task", "repository": repo, "workflow_run_id": runID, "run_attempt": attempt,
		"status": status, "app": "checkout", "environment": "staging", "cluster": "staging-eu",
		"release_id": release, "version": version, "observed_at": time.Now().UTC().Format(time.RFC3339Nano)}
	if failureType != "" {
		f["failure_type"] = failureType
	}
	s.Fact(f)
}

// healthyPrevious records release v1 as healthy: the rollback target.
func (s *scene) healthyPrevious() {
	s.fact(4001, 1, "success", "", "checkout-v1", "v1")
}

// failedRun adds a failed deploy run on main to the fake GitHub.
func (s *scene) failedRun(id int64, jobs ...githubtest.Job) {
	s.GitHub.AddWorkflowRun(repo, githubtest.WorkflowRun{ID: id, Path: ".github/workflows/deploy.yml", HeadSHA: s.sha,
		Conclusion: "failure", Jobs: jobs})
}

func runPayload(s *scene, id int64, attempt int, conclusion string) e2etest.Run {
	return e2etest.Run{Repository: repo, ID: id, Attempt: attempt, Conclusion: conclusion, HeadSHA: s.sha}
}

func (s *scene) deliverRun(id int64, attempt int, conclusion string) string {
	s.T.Helper()
	return s.Deliver("workflow_run", s.WorkflowRun(runPayload(s, id, attempt, conclusion)))
}

// failAttempt reports attempt of run failed with a health check failure of
// release checkout-v2 at v2: the bundled action's fact, then the run's
// workflow_run event.
func (s *scene) failAttempt(run int64, attempt int) {
	s.T.Helper()
	s.fact(run, attempt, "failed", "health_check_failure", "checkout-v2", "v2")
	s.deliverRun(run, attempt, "failure")
}

// retrying adds deploy run run, fails its first attempt and waits for
// ripcord to re-run it.
func (s *scene) retrying(run int64) {
	s.T.Helper()
	s.failedRun(run)
	s.failAttempt(run, 1)
	s.waitState(run, recoveryflow.StateRetrying)
}

// stopped has a person cancel the re-run ripcord asked for (attempt 2 of
// run) and waits for the episode to stop; it returns its "Stopped" check
// run once the jobs settled.
func (s *scene) stopped(run int64) githubtest.CheckRun {
	s.T.Helper()
	s.GitHub.CompleteRun(repo, run, "cancelled")
	s.deliverRun(run, 2, "cancelled")
	s.waitState(run, recoveryflow.StateStopped)
	cr := s.waitCheck("Stopped")
	s.Settle(jobKinds...)
	return cr
}

// rerunByHand re-runs the failed jobs of run as a person does, on GitHub.
func (s *scene) rerunByHand(run int64) {
	s.T.Helper()
	resp, err := http.Post(fmt.Sprintf("%srepos/%s/actions/runs/%d/rerun-failed-jobs", s.GitHub.URL(), repo, run), "application/json", nil)
	if err != nil {
		s.T.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		s.T.Fatalf("re-run by hand: %d", resp.StatusCode)
	}
}

func (s *scene) reruns() int { return s.Count("POST", rerunPath, 201) }

func (s *scene) state(runID int64) string {
	return s.String(`SELECT state FROM episodes WHERE repository = $1 AND run_id = $2`, repo, runID)
}

func (s *scene) waitState(runID int64, want recoveryflow.State) {
	s.T.Helper()
	s.WaitFor(fmt.Sprintf("episode %d to be %s", runID, want), wait, func() bool { return s.state(runID) == string(want) })
}

// check returns the one ripcord/recovery check run, failing when there is
// not exactly one.
func (s *scene) check() githubtest.CheckRun {
	s.T.Helper()
	var found []githubtest.CheckRun
	for _, c := range s.GitHub.CheckRuns(repo) {
		if c.Name == recoveryflow.CheckName {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		s.T.Fatalf("want one %s check run, got %d", recoveryflow.CheckName, len(found))
	}
	return found[0]
}

func (s *scene) waitCheck(title string) githubtest.CheckRun {
	s.T.Helper()
	s.WaitFor("check run "+title, wait, func() bool {
		for _, c := range s.GitHub.CheckRuns(repo) {
			if c.Name == recoveryflow.CheckName && strings.HasPrefix(c.Title, title) {
				return true
			}
		}
		return false
	})
	return s.check()
}

// auditTypes lists the recovery's audit events filed under key, oldest first.
func (s *scene) auditTypes(key string) []string {
	s.T.Helper()
	status, body := s.Do("GET", "/api/v1/audit?limit=1000&release_id="+key, "", nil)
	if status != 200 {
		s.T.Fatalf("GET /api/v1/audit: %d %s", status, body)
	}
	var out struct {
		Events []struct {
			Type string
			Data map[string]any
		} `json:"events"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		s.T.Fatal(err)
	}
	var types []string
	for i := len(out.Events) - 1; i >= 0; i-- {
		// The recovery's own events carry the run; the records' do not.
		if _, ok := out.Events[i].Data["run_id"]; ok {
			types = append(types, out.Events[i].Type)
		}
	}
	return types
}

// logCalls prints what the App asked of GitHub.
func (s *scene) logCalls(t *testing.T) {
	t.Helper()
	t.Logf("GitHub calls in order:\n  %s", strings.Join(s.Sequence(), "\n  "))
	t.Logf("GitHub calls per operation:\n%s", s.CountsByOperation())
}

// jobKinds are the recovery jobs Settle waits for.
var jobKinds = []string{"recovery_rerun", "recovery_check", "recovery_alert", "recovery_dispatch", "command_rerun",
	"comment_reply", "comment_reaction", "config_check", "delivery"}
