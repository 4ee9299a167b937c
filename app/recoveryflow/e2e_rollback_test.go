package recoveryflow_test

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// Retries exhausted with v1 healthy before and v2 (the failed version)
// running: the deploy workflow is dispatched with version v1, and the
// episode closes when that run succeeds.
func TestExhaustedRetriesRollBackByDispatchingThePreviousVersion(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL, repoConfig(1, "1ms"), app.Options{})
		s.healthyPrevious()
		const run = 5002
		s.retrying(run)

		s.GitHub.CompleteRun(repo, run, "failure")
		d := s.failureRollsBack(run, 2)
		if d.Workflow != "deploy.yml" || d.Ref != "main" || d.Inputs["version"] != "v1" || len(d.Inputs) != 1 {
			t.Errorf("dispatch = %+v, want deploy.yml on main with inputs {version: v1}", d)
		}
		if cr := s.waitCheck("Rolling back to v1"); cr.Status != "in_progress" {
			t.Errorf("check run while rolling back: %s/%s, want in_progress until the rollback ends", cr.Status, cr.Conclusion)
		}

		// The dispatched run is a run of deploy.yml too; its success closes the episode.
		s.GitHub.CompleteRun(repo, d.RunID, "success")
		s.deliverRun(d.RunID, 1, "success")
		s.waitState(run, recoveryflow.StateRolledBack)
		cr := s.waitCheck("Rolled back to v1")
		s.Settle(jobKinds...)
		s.logCalls(t)

		if s.reruns() != 1 {
			t.Errorf("re-runs = %d, want 1 (max_retries 1)", s.reruns())
		}
		if cr.Status != "completed" || cr.Conclusion != "neutral" || !strings.Contains(cr.Summary, "rule `rollback`") {
			t.Errorf("check run %s: %q", cr.Conclusion, cr.Summary)
		}
		want := []string{"failure_detected", "retry_initiated", "failure_detected", "rollback_initiated", "rollback_completed"}
		if got := s.auditTypes("checkout-v2"); !slices.Equal(got, want) {
			t.Errorf("audit trail = %v, want %v", got, want)
		}
		if n := len(s.GitHub.Issues(repo)); n != 0 {
			t.Errorf("issues = %d, want none: a rollback is not an alert", n)
		}
	})
}

// A build failure is re-run like any other failure while retries remain,
// then alerted, and never rolled back even with an eligible previous
// release (seed 000's order). The failure type comes from the failed job's
// name through failure_types, since the fact names none.
func TestBuildFailureIsRetriedThenAlertedNeverRolledBack(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL, repoConfig(2, "1ms"), app.Options{})
		s.healthyPrevious()
		const run = 5003
		s.failedRun(run, githubtest.Job{Name: "build image"}, githubtest.Job{Name: "deploy", Conclusion: "skipped"})
		for attempt := 1; attempt <= 3; attempt++ {
			if attempt > 1 {
				s.GitHub.CompleteRun(repo, run, "failure")
			}
			s.fact(run, attempt, "failed", "", "checkout-v2", "v2")
			s.deliverRun(run, attempt, "failure")
			if attempt < 3 {
				s.WaitFor("re-run", wait, func() bool { return s.reruns() == attempt })
				s.waitState(run, recoveryflow.StateRetrying)
			}
		}
		s.waitState(run, recoveryflow.StateAlerted)
		s.WaitFor("the alert issue", wait, func() bool { return len(s.GitHub.Issues(repo)) == 1 })
		cr := s.waitCheck("Manual intervention required")
		s.Settle(jobKinds...)
		s.logCalls(t)

		is := s.GitHub.Issues(repo)[0]
		if !slices.Contains(is.Labels, recoveryflow.IssueLabel) || !strings.Contains(is.Title, "checkout-v2") {
			t.Errorf("issue %q labelled %v, want the release in the title and label %s", is.Title, is.Labels, recoveryflow.IssueLabel)
		}
		for _, want := range []string{"build_failure", "retry_initiated", "manual_intervention_required", "alert-build-failure"} {
			if !strings.Contains(is.Body, want) {
				t.Errorf("issue body lacks %q:\n%s", want, is.Body)
			}
		}
		if n := len(s.GitHub.Dispatches(repo)); n != 0 {
			t.Errorf("dispatches = %d: a build failure was rolled back", n)
		}
		if s.reruns() != 2 || cr.Conclusion != "failure" {
			t.Errorf("re-runs = %d, check run %s; want 2 re-runs and a failing check", s.reruns(), cr.Conclusion)
		}
		if n := s.Count("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}/attempts/{attempt_number}/jobs", 200); n != 3 {
			t.Errorf("job listings = %d, want one per failed attempt", n)
		}
		want := []string{"failure_detected", "retry_initiated", "failure_detected", "retry_initiated", "failure_detected", "manual_intervention_required"}
		if got := s.auditTypes("checkout-v2"); !slices.Equal(got, want) {
			t.Errorf("audit trail = %v, want %v", got, want)
		}
	})
}

// The dispatched rollback run fails: seed 000 writes rollback_failed and
// the decision becomes an alert. The rollback run is ripcord's own, so it is
// not a new deploy failure to re-run (and, once its retries ran out, to roll
// back in turn).
func TestFailedRollbackRunAlertsInsteadOfStartingOver(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL, repoConfig(0, "1ms"), app.Options{})
		s.healthyPrevious()
		const run = 5006
		d := s.rollbackRunFails(run)
		s.WaitFor("the alert issue", wait, func() bool { return len(s.GitHub.Issues(repo)) == 1 })
		cr := s.waitCheck("Manual intervention required")
		s.Settle(jobKinds...)
		s.logCalls(t)

		if n := s.reruns(); n != 0 {
			t.Errorf("re-runs = %d, want none: the failed rollback run was retried as a deploy", n)
		}
		if n := s.Int(`SELECT COUNT(*) FROM episodes WHERE run_id = $1`, d.RunID); n != 0 {
			t.Errorf("the rollback run opened an episode of its own")
		}
		if !strings.Contains(cr.Summary, recoveryflow.RuleRollbackFailed) || !strings.Contains(cr.Summary, "v1") {
			t.Errorf("check run summary does not say the rollback to v1 failed:\n%s", cr.Summary)
		}
		if is := s.GitHub.Issues(repo)[0]; !strings.Contains(is.Body, "rollback_failed") {
			t.Errorf("issue body lacks rollback_failed:\n%s", is.Body)
		}
		want := []string{"failure_detected", "rollback_initiated", "rollback_failed", "manual_intervention_required"}
		if got := s.auditTypes("checkout-v2"); !slices.Equal(got, want) {
			t.Errorf("audit trail = %v, want %v", got, want)
		}

		// Delivered again: decided once.
		s.deliverRun(d.RunID, 1, "failure")
		s.Settle(jobKinds...)
		if got := s.auditTypes("checkout-v2"); !slices.Equal(got, want) {
			t.Errorf("audit trail after a redelivery = %v, want %v", got, want)
		}
	})
}

// GitHub refuses the rollback's dispatch (the workflow has no
// workflow_dispatch trigger): the episode does not stay "Rolling back"
// forever; it becomes an alert that quotes GitHub.
func TestRefusedRollbackDispatchAlerts(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL, repoConfig(0, "1ms"), app.Options{})
		s.GitHub.Handle("POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches",
			func(w http.ResponseWriter, r *http.Request, p map[string]string) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnprocessableEntity)
				_, _ = io.WriteString(w, `{"message": "Workflow does not have 'workflow_dispatch' trigger"}`)
			})
		s.healthyPrevious()
		const run = 5007
		s.failedRun(run)
		s.failAttempt(run, 1)
		s.waitState(run, recoveryflow.StateAlerted)
		s.WaitFor("the alert issue", wait, func() bool { return len(s.GitHub.Issues(repo)) == 1 })
		cr := s.waitCheck("Manual intervention required")
		s.Settle(jobKinds...)
		s.logCalls(t)

		if n := s.Count("POST", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches", 422); n != 1 {
			t.Errorf("dispatches tried = %d, want 1: asking again gets the same answer", n)
		}
		if !strings.Contains(cr.Summary, "workflow_dispatch' trigger") {
			t.Errorf("check run does not quote GitHub:\n%s", cr.Summary)
		}
		want := []string{"failure_detected", "rollback_initiated", "rollback_failed", "manual_intervention_required"}
		if got := s.auditTypes("checkout-v2"); !slices.Equal(got, want) {
			t.Errorf("audit trail = %v, want %v", got, want)
		}
	})
}

// The deploy run fails again after its rollback run failed (a person
// re-ran it), and the decision is a workflow rollback again: that rollback
// is dispatched and recorded, not skipped because of the earlier
// attempt's rollback run, which would leave the episode rolling_back.
func TestNewFailureAfterAFailedRollbackDispatchesItsOwnRollback(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL, repoConfig(0, "1ms"), app.Options{})
		s.healthyPrevious()
		const run = 5010
		s.rollbackRunFails(run)
		s.Settle(jobKinds...)

		// A person re-runs the deploy run; attempt 2 fails the same way.
		s.rerunByHand(run)
		s.GitHub.CompleteRun(repo, run, "failure")
		second := s.failureRollsBack(run, 2)
		s.GitHub.CompleteRun(repo, second.RunID, "success")
		s.deliverRun(second.RunID, 1, "success")
		s.waitState(run, recoveryflow.StateRolledBack)
		s.Settle(jobKinds...)
		s.logCalls(t)
	})
}

// rollbackRunFails fails the first attempt of run with retries exhausted,
// so recovery dispatches a workflow rollback, then fails that rollback run:
// the episode ends alerted. It returns the rollback's dispatch.
func (s *scene) rollbackRunFails(run int64) githubtest.Dispatch {
	s.T.Helper()
	s.failedRun(run)
	d := s.failureRollsBack(run, 1)
	s.GitHub.CompleteRun(repo, d.RunID, "failure")
	s.deliverRun(d.RunID, 1, "failure")
	s.waitState(run, recoveryflow.StateAlerted)
	return d
}

// failureRollsBack reports attempt of run failed (no retries are left) and
// waits for the workflow rollback it dispatches, the scene's next one, to
// be recorded on the episode; it returns that dispatch.
func (s *scene) failureRollsBack(run int64, attempt int) githubtest.Dispatch {
	s.T.Helper()
	n := len(s.GitHub.Dispatches(repo)) + 1
	s.failAttempt(run, attempt)
	s.WaitFor(fmt.Sprintf("rollback dispatch %d", n), wait, func() bool { return len(s.GitHub.Dispatches(repo)) == n })
	d := s.GitHub.Dispatches(repo)[n-1]
	s.WaitFor("the rollback run to be recorded", wait, func() bool {
		return s.Int(`SELECT rollback_run_id FROM episodes WHERE run_id = $1`, run) == int(d.RunID)
	})
	return d
}

// deliverDispatchedRun delivers the outcome of a run of deploy.yml started by
// a workflow dispatch, as GitHub reports a rollback run.
func (s *scene) deliverDispatchedRun(id int64, conclusion string) {
	s.T.Helper()
	r := runPayload(s, id, 1, conclusion)
	r.Event = "workflow_dispatch"
	s.Deliver("workflow_run", s.WorkflowRun(r))
}

// A person re-runs the deploy while its workflow rollback runs, and the
// re-run fails too: the new decision follows a rollback of its own. The
// first rollback's run, a run of deploy.yml too, then fails: it is
// ripcord's own rollback, not a deploy to retry or roll back in turn.
func TestEarlierRollbackRunIsNotTakenForADeploy(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL, repoConfig(0, "1ms"), app.Options{})
		s.healthyPrevious()
		const run = 5030
		s.failedRun(run)
		first := s.failureRollsBack(run, 1)

		s.rerunByHand(run)
		s.GitHub.CompleteRun(repo, run, "failure")
		second := s.failureRollsBack(run, 2)

		s.GitHub.CompleteRun(repo, first.RunID, "failure")
		s.deliverDispatchedRun(first.RunID, "failure")
		s.Settle(jobKinds...)
		if n := s.Int(`SELECT COUNT(*) FROM episodes WHERE run_id = $1`, first.RunID); n != 0 {
			t.Errorf("the first rollback run %d was taken for a failed deploy (%d episodes)", first.RunID, n)
		}
		if n := len(s.GitHub.Dispatches(repo)); n != 2 {
			t.Errorf("dispatches = %d, want 2: one rollback per decision", n)
		}
		if st := s.state(run); st != string(recoveryflow.StateRollingBack) {
			t.Errorf("episode %s, want rolling_back with the second rollback: the first one's outcome ends nothing", st)
		}

		s.GitHub.CompleteRun(repo, second.RunID, "success")
		s.deliverDispatchedRun(second.RunID, "success")
		s.waitState(run, recoveryflow.StateRolledBack)
		s.Settle(jobKinds...)
		s.logCalls(t)
		if n := s.reruns(); n != 1 {
			t.Errorf("re-runs = %d, want only the person's", n)
		}
		if n := len(s.GitHub.Issues(repo)); n != 0 {
			t.Errorf("issues = %d, want none", n)
		}
	})
}

// GitHub accepts the rollback's dispatch without naming its run (204), and
// the run fails before ripcord has found it: the episode follows that run
// and its rollback fails visibly, instead of the run being taken for a
// failed deploy and the episode waiting "Rolling back" for ever.
func TestUnnamedRollbackRunIsFollowedNotTakenForADeploy(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL, repoConfig(0, "1ms"), app.Options{})
		s.GitHub.IgnoreRunDetails(repo)
		s.healthyPrevious()
		const run = 5031
		s.failedRun(run)
		s.failAttempt(run, 1)
		s.WaitFor("the rollback dispatch", wait, func() bool { return len(s.GitHub.Dispatches(repo)) == 1 })
		d := s.GitHub.Dispatches(repo)[0]
		s.WaitFor("the dispatch accepted without its run", wait, func() bool {
			return s.Int(`SELECT rollback_run_id FROM episodes WHERE run_id = $1`, run) < 0
		})
		s.GitHub.CompleteRun(repo, d.RunID, "failure")
		s.deliverDispatchedRun(d.RunID, "failure")
		s.waitState(run, recoveryflow.StateAlerted)
		s.Settle(jobKinds...)
		s.logCalls(t)

		if n := s.Int(`SELECT COUNT(*) FROM episodes WHERE run_id = $1`, d.RunID); n != 0 {
			t.Errorf("the rollback run %d was taken for a failed deploy (%d episodes)", d.RunID, n)
		}
		if got := s.Int(`SELECT rollback_run_id FROM episodes WHERE run_id = $1`, run); got != int(d.RunID) {
			t.Errorf("rollback run %d, want %d", got, d.RunID)
		}
		want := []string{"failure_detected", "rollback_initiated", "rollback_failed", "manual_intervention_required"}
		if got := s.auditTypes("checkout-v2"); !slices.Equal(got, want) {
			t.Errorf("audit trail = %v, want %v", got, want)
		}
		if n := len(s.GitHub.Dispatches(repo)); n != 1 {
			t.Errorf("dispatches = %d, want 1", n)
		}
	})
}

// The rollback workflow lives in another repository (rollback.repository):
// its run's outcome, reported by that repository, ends the episode.
func TestRollbackRunInAnotherRepositoryEndsTheEpisode(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		const deployer = "acme/deployer"
		cfg := strings.Replace(repoConfig(0, "1ms"), "          workflow: deploy.yml\n",
			"          workflow: deploy.yml\n          repository: "+deployer+"\n", 1)
		s := newScene(t, dbURL, cfg, app.Options{})
		s.GitHub.PutFile(deployer, "main", ".github/workflows/deploy.yml", "on: workflow_dispatch\n")
		s.healthyPrevious()
		const run = 5032
		s.failedRun(run)
		s.failAttempt(run, 1)
		s.WaitFor("the rollback dispatch", wait, func() bool { return len(s.GitHub.Dispatches(deployer)) == 1 })
		d := s.GitHub.Dispatches(deployer)[0]
		s.WaitFor("the rollback run to be recorded", wait, func() bool {
			return s.Int(`SELECT rollback_run_id FROM episodes WHERE run_id = $1`, run) == int(d.RunID)
		})
		s.GitHub.CompleteRun(deployer, d.RunID, "success")
		s.Deliver("workflow_run", s.WorkflowRun(e2etest.Run{Repository: deployer, ID: d.RunID, Attempt: 1, Conclusion: "success",
			HeadSHA: s.sha, Event: "workflow_dispatch"}))
		s.waitState(run, recoveryflow.StateRolledBack)
		s.Settle(jobKinds...)
		s.logCalls(t)
	})
}

// One release deployed by two runs (the deploy started twice on one
// commit) that fail at once with the retries spent is one failed deploy:
// seed 000 decides it once. One run's recovery rolls back; the other's is
// rollback_skipped naming it, and the target is dispatched once.
func TestTwoFailedRunsOfOneReleaseRollBackOnce(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL, repoConfig(0, "1ms"), app.Options{})
		s.healthyPrevious()
		runs := []int64{5101, 5102}
		for _, run := range runs {
			s.failedRun(run)
			s.fact(run, 1, "failed", "health_check_failure", "checkout-v2", "v2")
		}
		for _, run := range runs {
			s.deliverRun(run, 1, "failure") // at once
		}
		s.WaitFor("both failures decided", wait, func() bool {
			return s.Int(`SELECT COUNT(*) FROM episodes WHERE run_id IN ($1, $2) AND state <> 'retry_scheduled'`, runs[0], runs[1]) == 2
		})
		s.Settle(jobKinds...)
		s.logCalls(t)

		if n := len(s.GitHub.Dispatches(repo)); n != 1 {
			t.Errorf("rollback dispatches = %d, want 1: the failed release was rolled back twice", n)
		}
		states := []string{s.state(runs[0]), s.state(runs[1])}
		slices.Sort(states)
		if !slices.Equal(states, []string{"rolling_back", "skipped"}) {
			t.Errorf("episode states = %v, want one rolling_back and one skipped", states)
		}
		got := s.auditTypes("checkout-v2")
		slices.Sort(got)
		want := []string{"failure_detected", "failure_detected", "rollback_initiated", "rollback_skipped"}
		if !slices.Equal(got, want) {
			t.Errorf("audit events = %v, want %v", got, want)
		}
		skipped := runs[0]
		if s.state(runs[1]) == "skipped" {
			skipped = runs[1]
		}
		if d := s.String(`SELECT decision FROM episodes WHERE run_id = $1`, skipped); !strings.Contains(d, `"skip-rollback-under-way"`) ||
			!strings.Contains(d, fmt.Sprintf("run %d too", runs[0]+runs[1]-skipped)) {
			t.Errorf("skipped episode's decision %s does not say which run's recovery rolls back", d)
		}
	})
}
