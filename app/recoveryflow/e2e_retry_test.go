package recoveryflow_test

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A deploy that fails twice and passes on the second re-run: two re-runs,
// one check run that ends green, no rollback, no issue.
func TestFailureThatSucceedsOnTheSecondRetry(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL, repoConfig(3, "1ms"), app.Options{})
		const run = 5001
		s.retrying(run)
		if got := s.reruns(); got != 1 {
			t.Fatalf("re-runs after the first failure = %d, want 1", got)
		}

		s.GitHub.CompleteRun(repo, run, "failure")
		s.failAttempt(run, 2)
		s.WaitFor("the second re-run", wait, func() bool { return s.reruns() == 2 })
		s.waitState(run, recoveryflow.StateRetrying)

		s.GitHub.CompleteRun(repo, run, "success")
		s.deliverRun(run, 3, "success")
		s.waitState(run, recoveryflow.StateRecovered)
		cr := s.waitCheck("Recovered")
		s.Settle(jobKinds...)
		s.logCalls(t)

		if cr.Conclusion != "success" || cr.HeadSHA != s.sha {
			t.Errorf("check run = %s on %s, want success on %s", cr.Conclusion, cr.HeadSHA, s.sha)
		}
		if got := s.reruns(); got != 2 {
			t.Errorf("re-runs = %d, want 2 (one per retry)", got)
		}
		if n := s.Count("POST", checkRuns, 0); n != 1 {
			t.Errorf("check runs created = %d, want 1 for the whole episode", n)
		}
		if n := len(s.GitHub.Dispatches(repo)); n != 0 {
			t.Errorf("dispatches = %d, want none", n)
		}
		if n := len(s.GitHub.Issues(repo)); n != 0 {
			t.Errorf("issues = %d, want none", n)
		}
		// The rollout start job of the release the first fact opened may read
		// the config at the same moment as the recovery decision, before
		// either has its ETag: then two reads answer 200.
		if got, first := s.Count("GET", contents, 304), s.Count("GET", contents, 200); first < 1 || first > 2 || got < 1 {
			t.Errorf("config reads: %d answered 200 and %d answered 304; want one (two when racing) 200 and 304s after it", first, got)
		}
		// The order of the calls that decide and act; the check-run updates
		// interleave with them as their jobs run, and so do config reads
		// (counted above), such as the rollout start's look at the release
		// the first fact opened; and so do the installation handler's reads
		// of the installation the set-up delivers and of its repositories.
		var acts []string
		for _, c := range s.Sequence() {
			if !strings.Contains(c, "check-runs") && !strings.HasPrefix(c, "GET "+contents+" ") &&
				!strings.HasPrefix(c, "GET /app/installations/") && !strings.HasPrefix(c, "GET /installation/repositories ") {
				acts = append(acts, c)
			}
		}
		wantActs := []string{
			"GET /repos/{owner}/{repo}/actions/runs/{run_id} 200", "POST " + rerunPath + " 201",
			"GET /repos/{owner}/{repo}/actions/runs/{run_id} 200", "POST " + rerunPath + " 201",
		}
		if !slices.Equal(acts, wantActs) {
			t.Errorf("calls =\n  %s\nwant\n  %s", strings.Join(acts, "\n  "), strings.Join(wantActs, "\n  "))
		}
		checkWrites := s.Count("POST", checkRuns, 0) + s.Count("PATCH", checkRuns+"/{check_run_id}", 0)
		t.Logf("writes: %d in all = %d re-runs (one write each) + %d check-run writes", s.Writes(), s.reruns(), checkWrites)
		if s.Writes() != s.reruns()+checkWrites {
			t.Errorf("writes = %d, want only the re-runs and the check run's", s.Writes())
		}
		want := []string{"failure_detected", "retry_initiated", "failure_detected", "retry_initiated", "state_changed"}
		if got := s.auditTypes("checkout-v2"); !slices.Equal(got, want) {
			t.Errorf("audit trail = %v, want %v", got, want)
		}
		if n := s.Int(`SELECT retry_count FROM episodes WHERE run_id = $1`, run); n != 2 {
			t.Errorf("retry_count = %d, want 2", n)
		}
	})
}

// The re-run ripcord asked for is cancelled by a person: ripcord stops too,
// and its check run says so instead of "Re-running the failed jobs" in
// progress for ever.
func TestCancelledReRunEndsTheWait(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL, repoConfig(3, "1ms"), app.Options{})
		const run = 5008
		s.retrying(run)

		cr := s.stopped(run)
		if cr.Status != "completed" || !strings.Contains(cr.Summary, "cancelled") {
			t.Errorf("check run %s/%s: %q", cr.Status, cr.Conclusion, cr.Summary)
		}
		if n := s.reruns(); n != 1 {
			t.Errorf("re-runs = %d, want 1", n)
		}
	})
}

// A person re-runs a run whose retry they cancelled, and that attempt
// fails: ripcord retries again. GitHub does not set a completed check run
// back in progress, so the retry shows on a new ripcord/recovery check run
// and the "Stopped" one is left as it was.
func TestRetryAfterAStopShowsOnANewCheckRun(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL, repoConfig(3, "1ms"), app.Options{})
		const run = 5009
		s.retrying(run)
		stopped := s.stopped(run)

		s.rerunByHand(run)
		s.GitHub.CompleteRun(repo, run, "failure")
		s.failAttempt(run, 3)
		s.waitState(run, recoveryflow.StateRetrying)
		s.WaitFor("a check run of the retry", wait, func() bool {
			for _, c := range s.GitHub.CheckRuns(repo) {
				if c.Name == recoveryflow.CheckName && c.ID != stopped.ID && strings.HasPrefix(c.Title, "Re-running") {
					return true
				}
			}
			return false
		})
		s.Settle(jobKinds...)
		s.logCalls(t)
		var runs []githubtest.CheckRun
		for _, c := range s.GitHub.CheckRuns(repo) {
			if c.Name == recoveryflow.CheckName {
				runs = append(runs, c)
			}
		}
		if len(runs) != 2 {
			t.Fatalf("%s check runs = %d, want 2: the stopped one and the retry's", recoveryflow.CheckName, len(runs))
		}
		for _, c := range runs {
			switch {
			case c.ID == stopped.ID && (c.Status != "completed" || c.Conclusion != "neutral" || !strings.HasPrefix(c.Title, "Stopped")):
				t.Errorf("the completed check run became %s/%s %q", c.Status, c.Conclusion, c.Title)
			case c.ID != stopped.ID && c.Status != "in_progress":
				t.Errorf("the retry's check run is %s/%s %q, want in_progress", c.Status, c.Conclusion, c.Title)
			}
		}
	})
}

// A run GitHub could not start (startup_failure: the workflow file or its
// permissions are broken) is an alert that says so: re-running it fails the
// same way, and nothing was deployed to roll back, even with retries left
// and an eligible previous release.
func TestStartupFailureAlertsWithoutRetryOrRollback(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL, repoConfig(2, "1ms"), app.Options{})
		s.healthyPrevious()
		const run = 5020
		s.GitHub.AddWorkflowRun(repo, githubtest.WorkflowRun{ID: run, Path: ".github/workflows/deploy.yml", HeadSHA: s.sha,
			Conclusion: "startup_failure"})
		s.deliverRun(run, 1, "startup_failure")
		s.waitState(run, recoveryflow.StateAlerted)
		s.WaitFor("the alert issue", wait, func() bool { return len(s.GitHub.Issues(repo)) == 1 })
		cr := s.waitCheck("Manual intervention required")
		s.Settle(jobKinds...)
		s.logCalls(t)

		if got := s.reruns(); got != 0 {
			t.Errorf("re-runs = %d, want none: a run that cannot start fails again", got)
		}
		if n := len(s.GitHub.Dispatches(repo)); n != 0 {
			t.Errorf("dispatches = %d, want none: nothing was deployed", n)
		}
		if cr.Conclusion != "failure" || !strings.Contains(cr.Summary, "rule `alert-startup-failure`") ||
			!strings.Contains(cr.Summary, "workflow file is invalid") {
			t.Errorf("check run %s does not say the workflow could not start:\n%s", cr.Conclusion, cr.Summary)
		}
		want := []string{"failure_detected", "manual_intervention_required"}
		if got := s.auditTypes(url.QueryEscape(recoveryflow.RunKey(repo, run))); !slices.Equal(got, want) {
			t.Errorf("audit trail = %v, want %v", got, want)
		}
	})
}
