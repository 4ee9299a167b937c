package recoveryflow_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow"
	"github.com/ripcord/ripcord/internal/testdb"
)

const dispatchPath = "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches"

// limitAnswer is how GitHub says its rate limit is spent: the headers of
// its 403, and how long after it the job is due to try again.
type limitAnswer struct {
	name   string
	header func(now time.Time) []string
	wait   time.Duration
}

var limitAnswers = []limitAnswer{
	{name: "Retry-After", header: func(time.Time) []string { return []string{"Retry-After", "1500"} }, wait: 25 * time.Minute},
	{name: "x-ratelimit-reset", header: func(now time.Time) []string {
		return []string{"X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "0", "X-RateLimit-Used", "5000",
			"X-RateLimit-Resource", "core", "X-RateLimit-Reset", strconv.FormatInt(now.Add(20*time.Minute).Unix(), 10)}
	}, wait: 20*time.Minute + time.Second},
}

// limitLifts lets GitHub answer again and ripcord try again at once: the
// server restarts (forgetting the reset it learned) and the jobs that wait
// are made due, as they would be once the limit lifted.
func (s *scene) limitLifts(lift *atomic.Bool) {
	s.T.Helper()
	lift.Store(true)
	s.Restart()
	s.Exec(`UPDATE river_job SET scheduled_at = created_at WHERE state IN ('scheduled', 'retryable')`)
}

// waitedOn waits until GitHub refused kind's job and the job stopped.
func (s *scene) waitedOn(kind string, refused *atomic.Int32, n int32) {
	s.T.Helper()
	s.WaitFor(kind+" to meet the limit", wait, func() bool {
		return refused.Load() >= n && s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = $1 AND state IN ('available', 'running')`, kind) == 0
	})
}

// toldOfWait counts the writes to the ripcord/recovery check run that
// carry notice.
func (s *scene) toldOfWait(notice string) int {
	n := 0
	for _, r := range s.GitHub.Requests() {
		if (r.Route == checkRuns || r.Route == checkRuns+"/{check_run_id}") && r.Method != "GET" && strings.Contains(string(r.Body), notice) {
			n++
		}
	}
	return n
}

// spentNoAttempt fails unless kind's one job completed at its first
// attempt, with no error: waiting for GitHub's rate limit was no failure.
func (s *scene) spentNoAttempt(kind string) {
	s.T.Helper()
	js := s.Jobs(kind)
	if len(js) != 1 {
		s.T.Fatalf("%d %s jobs, want 1", len(js), kind)
	}
	if j := js[0]; j.State != rivertype.JobStateCompleted || j.Attempt != 1 || len(j.Errors) != 0 {
		s.T.Errorf("%s job %s at attempt %d with %d errors (%v), want completed at attempt 1 with none",
			kind, j.State, j.Attempt, len(j.Errors), j.Errors)
	}
}

// A scheduled re-run that meets GitHub's rate limit waits until the time
// GitHub names, counting no attempt and alerting nobody, and re-runs the
// run once the limit lifts. A 403 that is no rate limit is still GitHub's
// "no": an alert that quotes it.
func TestRateLimitedReRunWaitsForTheLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range limitAnswers {
		t.Run(tc.name, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				t.Parallel()
				s := newScene(t, dbURL, repoConfig(3, "1ms"), app.Options{})
				const run = 5101
				s.failedRun(run)
				var lift atomic.Bool
				var refused atomic.Int32
				start := time.Now().Truncate(time.Second)
				s.GitHub.RefuseForRateLimit("POST "+rerunPath, &lift, &refused, tc.header(start)...)
				s.failAttempt(run, 1)
				s.waitedOn("recovery_rerun", &refused, 1)
				s.WaitsForLimit("recovery_rerun", 1, start, time.Now(), tc.wait)
				if st := s.state(run); st != string(recoveryflow.StateRetryScheduled) {
					t.Errorf("episode %s while GitHub's rate limit holds, want %s", st, recoveryflow.StateRetryScheduled)
				}
				if n := len(s.GitHub.Issues(repo)); n != 0 {
					t.Errorf("%d alert issues while GitHub's rate limit holds, want none", n)
				}
				if t.Failed() {
					return
				}

				s.limitLifts(&lift)
				s.waitState(run, recoveryflow.StateRetrying)
				s.Settle(jobKinds...)
				s.logCalls(t)
				if n := s.reruns(); n != 1 {
					t.Errorf("re-runs = %d, want 1", n)
				}
				s.spentNoAttempt("recovery_rerun")
			})
		})
	}
	t.Run("a refusal", func(t *testing.T) {
		testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
			t.Parallel()
			s := newScene(t, dbURL, repoConfig(3, "1ms"), app.Options{})
			s.alertsOnRefusal(5102, rerunPath, recoveryflow.RuleRerunRefused)
		})
	})
}

// refuse answers as GitHub does a request the App may not make: a 403
// with no rate-limit header.
func refuse(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusForbidden)
	_, _ = io.WriteString(w, `{"message": "Resource not accessible by integration"}`)
}

// alertsOnRefusal fails run's first attempt with GitHub refusing recovery's
// POST to route, a 403 that is no rate limit: recovery asks once (asking
// again gets the same answer) and alerts under rule, quoting GitHub.
func (s *scene) alertsOnRefusal(run int64, route, rule string) {
	s.T.Helper()
	s.failedRun(run)
	s.GitHub.Handle("POST "+route, refuse)
	s.failAttempt(run, 1)
	s.waitState(run, recoveryflow.StateAlerted)
	s.WaitFor("the alert issue", wait, func() bool { return len(s.GitHub.Issues(repo)) == 1 })
	cr := s.waitCheck("Manual intervention required")
	s.Settle(jobKinds...)
	if n := s.Count("POST", route, 403); n != 1 {
		s.T.Errorf("POST %s tried %d times, want 1: asking again gets the same answer", route, n)
	}
	if !strings.Contains(cr.Summary, rule) || !strings.Contains(cr.Summary, "Resource not accessible") {
		s.T.Errorf("check run does not quote GitHub's refusal under %s:\n%s", rule, cr.Summary)
	}
}

// A rollback dispatch that meets GitHub's rate limit waits for it,
// counting no attempt, and says so at once on the ripcord/recovery check
// run (v2, the failed release, stays live meanwhile), once however many
// tries meet the limit; once the limit lifts the rollback is dispatched
// and the check run says it runs. A 403 that is no rate limit still ends
// the rollback rollback_failed.
func TestRateLimitedRollbackDispatchWaitsAndSaysSo(t *testing.T) {
	t.Parallel()
	const notice = "waiting for GitHub's rate limit"
	t.Run("Retry-After", func(t *testing.T) {
		testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
			t.Parallel()
			s := newScene(t, dbURL, repoConfig(0, "1ms"), app.Options{})
			s.healthyPrevious()
			const run = 5111
			s.failedRun(run)
			var lift atomic.Bool
			var refused atomic.Int32
			start := time.Now().Truncate(time.Second)
			s.GitHub.RefuseForRateLimit("POST "+dispatchPath, &lift, &refused, "Retry-After", "1500")
			s.failAttempt(run, 1)
			s.waitedOn("recovery_dispatch", &refused, 1)
			s.WaitsForLimit("recovery_dispatch", 1, start, time.Now(), 25*time.Minute)
			cr := s.waitCheck("Rolling back to v1: " + notice)
			if cr.Status != "in_progress" || !strings.Contains(cr.Summary, "v2 stays live") {
				t.Errorf("check run while the dispatch waits: %s %q\n%s\nwant in progress, saying v2 stays live", cr.Status, cr.Title, cr.Summary)
			}
			if n := len(s.GitHub.Issues(repo)); n != 0 {
				t.Errorf("%d alert issues while GitHub's rate limit holds, want none", n)
			}
			s.Settle("recovery_check")
			// Once, or twice when the job of the state before the wait was
			// writing as the wait's own job began: then the order of their
			// writes is unknown, and both show the wait.
			told := s.toldOfWait(notice)
			if told < 1 || told > 2 {
				t.Errorf("the check run was told of the wait %d times, want once (twice when two jobs raced)", told)
			}

			// The job tries again before the limit lifts: it waits again,
			// and says nothing more.
			s.Exec(`UPDATE river_job SET scheduled_at = created_at WHERE kind = 'recovery_dispatch' AND state = 'scheduled'`)
			s.waitedOn("recovery_dispatch", &refused, 2)
			s.Settle("recovery_check")
			s.WaitsForLimit("recovery_dispatch", 1, time.Now().Add(-wait), time.Now(), 25*time.Minute)
			if n := s.toldOfWait(notice); n != told {
				t.Errorf("the check run was told of the wait %d times after the second try met the limit, want still %d", n, told)
			}
			if t.Failed() {
				return
			}

			s.limitLifts(&lift)
			s.WaitFor("the rollback dispatch", wait, func() bool { return len(s.GitHub.Dispatches(repo)) == 1 })
			d := s.GitHub.Dispatches(repo)[0]
			s.WaitFor("the rollback run to be recorded", wait, func() bool {
				return s.Int(`SELECT rollback_run_id FROM episodes WHERE run_id = $1`, run) == int(d.RunID)
			})
			cr = s.waitCheck("Rolling back to v1")
			s.Settle(jobKinds...)
			s.logCalls(t)
			if cr = s.check(); strings.Contains(cr.Title, notice) || strings.Contains(cr.Summary, "rate limit") {
				t.Errorf("check run once dispatched: %q\n%s\nwant no word of the wait", cr.Title, cr.Summary)
			}
			if n := s.toldOfWait(notice); n != told {
				t.Errorf("the check run was told of the wait %d times once dispatched, want still %d", n, told)
			}
			if n := refused.Load(); n != 2 {
				t.Errorf("%d dispatches refused, want 2", n)
			}
			s.spentNoAttempt("recovery_dispatch")
			if st := s.state(run); st != string(recoveryflow.StateRollingBack) {
				t.Errorf("episode %s, want %s", st, recoveryflow.StateRollingBack)
			}
		})
	})
	t.Run("a refusal", func(t *testing.T) {
		testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
			t.Parallel()
			s := newScene(t, dbURL, repoConfig(0, "1ms"), app.Options{})
			s.healthyPrevious()
			s.alertsOnRefusal(5112, dispatchPath, recoveryflow.RuleRollbackFailed)
		})
	})
}

// Recovery's own writes, its ripcord/recovery check run and its alert
// issue, wait for GitHub's rate limit too, counting no attempt: a limit
// that outlasts River's backoff must not leave an alert unsaid. Once the
// limit lifts both are written, and no job has an error.
func TestRateLimitedRecoveryCheckAndAlertWaitForTheLimit(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL, repoConfig(3, "1ms"), app.Options{})
		const run = 5103
		s.failedRun(run)
		s.GitHub.Handle("POST "+rerunPath, refuse)
		var lift atomic.Bool
		var refused atomic.Int32
		start := time.Now().Truncate(time.Second)
		s.GitHub.RefuseForRateLimit("POST "+checkRuns, &lift, &refused, "Retry-After", "1500")
		s.GitHub.RefuseForRateLimit("POST /repos/{owner}/{repo}/issues", &lift, &refused, "Retry-After", "1500")
		s.failAttempt(run, 1)
		s.waitState(run, recoveryflow.StateAlerted)
		s.waitedOn("recovery_alert", &refused, 2)
		s.WaitsForLimit("recovery_alert", 1, start, time.Now(), 25*time.Minute)
		// The check job that claimed the check run's creation waits for
		// the limit; one for a newer view of the episode waits for that
		// claim, trying again every few seconds, and one superseded
		// completes at once. None spends an attempt.
		s.WaitFor("a recovery_check job to wait for the limit", wait, func() bool {
			return s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'recovery_check' AND state = 'scheduled'
				AND scheduled_at > $1`, time.Now().Add(20*time.Minute)) == 1
		})
		for _, j := range s.Jobs("recovery_check") {
			if j.Attempt > 1 || len(j.Errors) != 0 {
				t.Errorf("recovery_check job %s at attempt %d with errors %v on GitHub's rate limit: the wait is not a failed attempt",
					j.State, j.Attempt, j.Errors)
			}
		}
		if t.Failed() {
			return
		}

		s.limitLifts(&lift)
		s.WaitFor("the alert issue", wait, func() bool { return len(s.GitHub.Issues(repo)) == 1 })
		s.waitCheck("Manual intervention required")
		s.Settle(jobKinds...)
		s.spentNoAttempt("recovery_alert")
		for _, j := range s.Jobs("recovery_check") {
			if j.State != rivertype.JobStateCompleted || len(j.Errors) != 0 {
				t.Errorf("recovery_check job %s with %d errors (%v), want completed with none", j.State, len(j.Errors), j.Errors)
			}
		}
	})
}
