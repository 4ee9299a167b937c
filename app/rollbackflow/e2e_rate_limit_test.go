package rollbackflow_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/internal/testdb"
)

// refuseForLimit has GitHub refuse every blob the rollback pull request
// writes for its rate limit (githubtest.RefuseForRateLimit).
func (s *scene) refuseForLimit(lift *atomic.Bool, refused *atomic.Int32, header ...string) {
	s.GitHub.RefuseForRateLimit("POST /repos/{owner}/{repo}/git/blobs", lift, refused, header...)
}

// pullRequestJob is the rollback pull request job, read through River.
func pullRequestJob(t *testing.T, dbURL string) *rivertype.JobRow {
	t.Helper()
	rc, err := river.NewClient(testdb.Open(t, dbURL).RiverDriver(), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := rc.JobList(context.Background(), river.NewJobListParams().Kinds("rollback_pull_request").
		States(rivertype.JobStateAvailable, rivertype.JobStateScheduled, rivertype.JobStateRetryable, rivertype.JobStateRunning,
			rivertype.JobStateCompleted, rivertype.JobStateDiscarded, rivertype.JobStateCancelled))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != 1 {
		t.Fatalf("rollback pull request jobs = %d, want 1", len(res.Jobs))
	}
	return res.Jobs[0]
}

// GitHub's rate limit, spent for longer than the client holds a request,
// is not a failure of the rollback: its job waits until the time GitHub
// names (Retry-After, else x-ratelimit-reset), not River's backoff, at most
// an hour, and the wait is not counted as an attempt. The person who asked
// is told when it tries again (except when the installation's own limit is
// spent: that comment waits for the reset like every other request).
// Once the limit lifts, the pull request is opened.
func TestRollbackCommandWaitsForGitHubsRateLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// header is the refusal's headers at now.
		header func(now time.Time) []string
		// wait is how long after now the job tries again.
		wait time.Duration
		// told: the installation's limit is not spent, so the notice is
		// posted.
		told bool
	}{
		{"secondary limit with Retry-After", func(time.Time) []string { return []string{"Retry-After", "1200"} },
			20 * time.Minute, true},
		{"primary limit spent until x-ratelimit-reset", func(now time.Time) []string {
			return []string{"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(now.Add(25*time.Minute).Unix(), 10)}
		}, 25*time.Minute + time.Second, false},
		{"a time past the bound waits an hour", func(time.Time) []string { return []string{"Retry-After", "10800"} },
			time.Hour, true},
		// GitHub's clock behind ours: sent again at once, the request
		// would meet the same refusal, each a new "tries again" comment.
		{"a reset already past waits a minute", func(now time.Time) []string {
			return []string{"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(now.Add(-30*time.Second).Unix(), 10)}
		}, time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				t.Parallel()
				s := newScene(t, dbURL)
				var lift atomic.Bool
				var refused atomic.Int32
				start := time.Now().Truncate(time.Second)
				s.refuseForLimit(&lift, &refused, tc.header(start)...)
				s.GitHub.PutFile(appRepo, "feature", "app.txt", "change")
				pr := s.GitHub.OpenPullRequest(appRepo, "octocat", "feature", "main", "Ship it")
				s.GitHub.SetPermission(appRepo, "octocat", "write")
				id := s.comment(pr, "octocat", "/ripcord rollback the canary is failing", false)

				s.WaitFor("the job waiting for the rate limit", wait, func() bool {
					return refused.Load() > 0 && pullRequestJob(t, dbURL).State == rivertype.JobStateScheduled
				})
				end := time.Now()
				job := pullRequestJob(t, dbURL)
				if job.Attempt != 0 {
					t.Errorf("attempt = %d after waiting for the rate limit, want 0: the wait is not a failed attempt", job.Attempt)
				}
				lo, hi := start.Add(tc.wait-2*time.Second), end.Add(tc.wait+2*time.Second)
				if job.ScheduledAt.Before(lo) || job.ScheduledAt.After(hi) {
					t.Errorf("tried again at %s, want %s after the refusal (between %s and %s)", job.ScheduledAt.UTC().Format(time.RFC3339),
						tc.wait, lo.UTC().Format(time.RFC3339), hi.UTC().Format(time.RFC3339))
				}
				// The notice names the minute it tries again, reckoned a moment
				// before or after the job's own time: the two may fall on
				// either side of a minute's turn.
				var again []string
				for _, d := range []time.Duration{-time.Minute, 0, time.Minute} {
					again = append(again, job.ScheduledAt.Add(d).UTC().Format("15:04"))
				}
				if tc.told {
					s.WaitFor("the notice of when it tries again", wait, func() bool {
						for _, r := range s.replies(id) {
							if strings.Contains(r, "rate limit") && strings.Contains(r, "tries again at") &&
								slices.ContainsFunc(again, func(m string) bool { return strings.Contains(r, m) }) {
								return true
							}
						}
						return false
					})
				}
				if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE type = 'rollback_failed'`); n != 0 {
					t.Errorf("rollback_failed events = %d, want none: a rate limit is no failure", n)
				}
				if tc.told {
					// The limit lifts at the time named; the job runs then
					// (here made due at once) and opens the pull request.
					lift.Store(true)
					if _, err := testdb.Open(t, dbURL).Write.Exec(`UPDATE river_job SET scheduled_at = created_at
						WHERE kind = 'rollback_pull_request' AND state = 'scheduled'`); err != nil {
						t.Fatal(err)
					}
					s.WaitFor("the pull request link", wait, func() bool {
						for _, r := range s.replies(id) {
							if strings.Contains(r, "/pull/") {
								return true
							}
						}
						return false
					})
					if n := len(s.GitHub.PullRequests(gitops)); n != 1 {
						t.Errorf("pull requests on %s = %d, want 1", gitops, n)
					}
				}
			})
		})
	}
}

// A rollback asked for with the Roll back button waits for GitHub's rate
// limit the same way, and its check run's note says when it tries again.
func TestRollBackButtonSaysWhenItTriesAgainAfterGitHubsRateLimit(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		var lift atomic.Bool
		var refused atomic.Int32
		s.refuseForLimit(&lift, &refused, "Retry-After", "1800")
		failed := s.clickR3()
		s.WaitFor("the job waiting for the rate limit", wait, func() bool {
			return refused.Load() > 0 && pullRequestJob(t, dbURL).State == rivertype.JobStateScheduled
		})
		again := pullRequestJob(t, dbURL).ScheduledAt.UTC().Format("15:04")
		s.WaitFor("the check run's note of when it tries again", wait, func() bool {
			cr, _ := s.releaseCheck(failed)
			return strings.Contains(cr.Summary, "@octocat") && strings.Contains(cr.Summary, "tries again at") &&
				strings.Contains(cr.Summary, again)
		})
	})
}

// A rollback started through the API (or by recovery) has nobody to reply
// to: its wait for GitHub's rate limit is written on the release rolled
// back, with until when, once per wait, not again for each try of the job
// that meets the same reset.
func TestARollbackWaitingForGitHubsRateLimitIsAudited(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		var lift atomic.Bool
		var refused atomic.Int32
		reset := time.Now().Add(25 * time.Minute).Truncate(time.Second)
		s.refuseForLimit(&lift, &refused, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
		status, out := s.Do("POST", "/api/v1/rollbacks", "application/json", []byte(`{"app":"checkout","environment":"prod","reason":"r3 leaks memory"}`))
		if status != 202 {
			t.Fatalf("POST /api/v1/rollbacks = %d %s", status, out)
		}
		until := reset.Add(time.Second).UTC().Format(time.RFC3339)
		limited := func() int {
			return s.Int(`SELECT COUNT(*) FROM audit_events WHERE type = 'rollback_rate_limited' AND release_id = $1`, "r3:prod-eu/prod")
		}
		var tried time.Time // when the job last ran
		for try := range 2 {
			if try > 0 {
				// The job tries again before the reset (its snooze ended,
				// as one capped at an hour does): the same wait.
				s.Exec(`UPDATE river_job SET scheduled_at = created_at WHERE kind = 'rollback_pull_request' AND state = 'scheduled'`)
			}
			s.WaitFor("the job waiting for the rate limit", wait, func() bool {
				j := pullRequestJob(t, dbURL)
				if refused.Load() == 0 || j.State != rivertype.JobStateScheduled || j.AttemptedAt == nil || !j.AttemptedAt.After(tried) {
					return false
				}
				tried = *j.AttemptedAt
				return true
			})
			if n := limited(); n != 1 {
				t.Fatalf("try %d: rollback_rate_limited events on r3 = %d, want 1", try, n)
			}
		}
		msg := s.String(`SELECT message FROM audit_events WHERE type = 'rollback_rate_limited' AND release_id = $1`, "r3:prod-eu/prod")
		if !strings.Contains(msg, "rate limit") || !strings.Contains(msg, until) {
			t.Errorf("rollback_rate_limited message %q, want it to name GitHub's rate limit and %s", msg, until)
		}
	})
}
