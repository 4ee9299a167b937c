package rolloutflow

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/internal/ghlimit"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// The rollout's check run cannot be written while GitHub refuses the App a
// token for its installation (deleted: 404, suspended: 403) or does not
// answer for one. Nothing is wrong with the check run: the job is not
// retried to the end of its attempts and failed, but waits for the next
// poll (a snooze, which costs no attempt), the audit says access is lost
// once (not for an unanswered token), and the check run is written once
// GitHub gives tokens again.
func TestACheckRunWithoutATokenWaitsForIt(t *testing.T) {
	t.Parallel()
	for _, c := range tokenFailures {
		t.Run(c.name, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				h := heldRollout(t, dbURL)
				tokens := answerTokens(h)
				tokens.set(c.status)
				h.x = h.executor() // no token of the installation cached
				w, job := checkJob(h)
				for range 3 {
					err := w.Work(context.Background(), job)
					var snooze *river.JobSnoozeError
					if !errors.As(err, &snooze) || snooze.Duration != runPoll {
						t.Fatalf("check run job without a token: %v; want it snoozed until the next poll (%s)", err, runPoll)
					}
				}
				lost := h.auditOf("access-lost")
				switch {
				case c.lost && (len(lost) != 1 || !strings.Contains(lost[0], fmt.Sprintf("installation %d", githubtest.InstallationID)) ||
					!strings.Contains(lost[0], CheckName)):
					t.Errorf("access-lost audit lines %q, want one naming installation %d and %s",
						lost, githubtest.InstallationID, CheckName)
				case !c.lost && len(lost) != 0:
					t.Errorf("access-lost audit lines %q while the installation's answer is unknown", lost)
				}
				if n := len(h.gh.CheckRuns(testRepo)); n != 0 {
					t.Fatalf("%d check runs without a token", n)
				}

				tokens.set(0)
				h.clock.set(h.clock.Now().Add(runPoll))
				if err := w.Work(context.Background(), job); err != nil {
					t.Fatalf("check run job once GitHub gives tokens again: %v", err)
				}
				crs := h.gh.CheckRuns(testRepo)
				if len(crs) != 1 || crs[0].Name != CheckName || crs[0].Status != "in_progress" {
					t.Errorf("check runs %+v once GitHub gives tokens again, want the rollout's, in progress", crs)
				}
			})
		})
	}
}

// While the installation is gone, the run polls and the check run job
// (snoozed until the next poll) both meet it, in turn, every 5 minutes:
// each says so once, not once per poll.
func TestAccessLostIsSaidOnceByThePollsAndTheCheckRunInTurn(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := heldRollout(t, dbURL)
		answerTokens(h).set(http.StatusNotFound)
		h.x = h.executor() // no token of the installation cached
		w, job := checkJob(h)
		for range 4 {
			h.clock.set(h.rollout().WakeAt)
			h.tickAs(true)
			var snooze *river.JobSnoozeError
			if err := w.Work(context.Background(), job); !errors.As(err, &snooze) {
				t.Fatalf("check run job without a token: %v; want it snoozed", err)
			}
		}
		lost := h.auditOf("access-lost")
		if len(lost) != 2 || !strings.HasPrefix(lost[0], "runs of "+testRepo) || !strings.HasPrefix(lost[1], CheckName) {
			t.Errorf("access-lost audit lines %q, want one for the runs and one for the check run", lost)
		}
	})
}

// A repository removed from the installation: GitHub answers 404 on the
// check run and on the repository. As for a token refused, the job waits
// for the next poll instead of failing, the audit says access is lost,
// once, and the check run is written once access is back. A 404 while the
// repository reads stays the job's error.
func TestACheckRunOfARepositoryNoLongerReadableWaitsForAccess(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := heldRollout(t, dbURL)
		repo := answerRoute(h, "GET /repos/{owner}/{repo}")
		create := answerRoute(h, "POST /repos/{owner}/{repo}/check-runs")
		w, job := checkJob(h)
		var snooze *river.JobSnoozeError

		create.set(http.StatusNotFound)
		if err := w.Work(context.Background(), job); err == nil || errors.As(err, &snooze) {
			t.Fatalf("check run job with a 404 on the check run and the repository reading: %v; want its error", err)
		}

		repo.set(http.StatusNotFound)
		for range 3 {
			if err := w.Work(context.Background(), job); !errors.As(err, &snooze) || snooze.Duration != runPoll {
				t.Fatalf("check run job with no access to the repository: %v; want it snoozed until the next poll (%s)", err, runPoll)
			}
		}
		if lost := h.auditOf("access-lost"); len(lost) != 1 || !strings.Contains(lost[0], CheckName) || !strings.Contains(lost[0], testRepo) {
			t.Errorf("access-lost audit lines %q, want one naming %s and %s", lost, CheckName, testRepo)
		}

		repo.set(0)
		create.set(0)
		if err := w.Work(context.Background(), job); err != nil {
			t.Fatalf("check run job once access is back: %v", err)
		}
		if crs := h.gh.CheckRuns(testRepo); len(crs) != 1 || crs[0].Name != CheckName {
			t.Errorf("check runs %+v once access is back, want the rollout's", crs)
		}
	})
}

// After a 404 on the check run the job asks for the repository. GitHub's
// rate limit on that request says nothing yet, and retried with backoff
// the job would spend its attempts against a limit that has not reset:
// it waits for the reset instead (a snooze, which costs no attempt), as
// for a rate limit on the check run, and writes the check run then. A
// rate limit is no access lost.
func TestACheckRun404WithTheRepositoryRateLimitedWaitsForTheReset(t *testing.T) {
	t.Parallel()
	for _, c := range limitedAnswers {
		t.Run(c.name, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				h := heldRollout(t, dbURL)
				repo := answerRoute(h, "GET /repos/{owner}/{repo}")
				create := answerRoute(h, "POST /repos/{owner}/{repo}/check-runs")
				create.set(http.StatusNotFound)
				until := limit(h, repo, c.status)
				w, job := checkJob(h)
				want := until.Sub(h.clock.Now())
				var snooze *river.JobSnoozeError
				if err := w.Work(context.Background(), job); !errors.As(err, &snooze) ||
					snooze.Duration < want || snooze.Duration > want+time.Second {
					t.Fatalf("check run job on a 404 with its repository rate-limited: %v; want it snoozed until the reset (%s)", err, want)
				}
				if lost := h.auditOf("access-lost"); len(lost) != 0 {
					t.Errorf("access-lost audit lines %q for a rate limit", lost)
				}

				repo.set(0)
				create.set(0)
				h.clock.set(h.clock.Now().Add(snooze.Duration))
				if err := w.Work(context.Background(), job); err != nil {
					t.Fatalf("check run job after the reset: %v", err)
				}
				if crs := h.gh.CheckRuns(testRepo); len(crs) != 1 || crs[0].Name != CheckName {
					t.Errorf("check runs %+v after the reset, want the rollout's", crs)
				}
			})
		})
	}
}

// GitHub's rate limit, past what the client waits out, on the check run or
// on the installation's token, says "later", not "no": the job is not
// retried with backoff (spending its attempts, and discarded once they run
// out, the check run left stale) but waits for the reset (a snooze, which
// costs no attempt), and writes the rollout as it stands then. A rate
// limit is no access lost.
func TestARateLimitedCheckRunWaitsForTheReset(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		token  bool // the token request is limited, not the check run
		status int
		header func(now time.Time) (http.Header, time.Time)
		fresh  bool // go-github keeps a spent primary limit by the wall clock (see TestARateLimitedDispatchFailsNoBatch)
	}{
		{"primary limit spent (403)", false, http.StatusForbidden, primaryLimit, true},
		{"secondary limit (403, Retry-After)", false, http.StatusForbidden, retryAfter, false},
		{"too many requests (429, Retry-After)", false, http.StatusTooManyRequests, retryAfter, false},
		{"installation token, primary limit spent (403)", true, http.StatusForbidden, primaryLimit, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				h := heldRollout(t, dbURL)
				tokens := answerTokens(h)
				create := answerRoute(h, "POST /repos/{owner}/{repo}/check-runs")
				header, until := c.header(h.clock.Now())
				limited := create
				if c.token {
					limited = tokens
					h.x = h.executor() // no token of the installation cached
				}
				limited.mu.Lock()
				limited.status, limited.header = c.status, header
				limited.mu.Unlock()
				w, job := checkJob(h)
				want := until.Sub(h.clock.Now())
				var snooze *river.JobSnoozeError
				if err := w.Work(context.Background(), job); !errors.As(err, &snooze) ||
					snooze.Duration < want || snooze.Duration > want+time.Second {
					t.Fatalf("check run job on GitHub's rate limit: %v; want it snoozed until the reset (%s)", err, want)
				}
				if n := len(h.gh.CheckRuns(testRepo)); n != 0 {
					t.Fatalf("%d check runs while the rate limit is spent", n)
				}
				if lost := h.auditOf("access-lost"); len(lost) != 0 {
					t.Errorf("access-lost audit lines %q for a rate limit", lost)
				}

				limited.set(0)
				h.clock.set(h.clock.Now().Add(snooze.Duration))
				if c.fresh {
					h.x = h.executor()
					w = &checkWorker{x: h.x}
				}
				if err := w.Work(context.Background(), job); err != nil {
					t.Fatalf("check run job after the reset: %v", err)
				}
				if crs := h.gh.CheckRuns(testRepo); len(crs) != 1 || crs[0].Name != CheckName || crs[0].Status != "in_progress" {
					t.Errorf("check runs %+v after the reset, want the rollout's, in progress", crs)
				}
			})
		})
	}
}

// tokenFailures are GitHub's answers to the App's request for an
// installation token that say nothing against a rollout: lost says whether
// the App lost access (the installation deleted or suspended) or GitHub
// did not answer (-1: no answer at all).
var tokenFailures = []struct {
	name   string
	status int
	lost   bool
}{
	{"deleted", http.StatusNotFound, true},
	{"suspended", http.StatusForbidden, true},
	{"token unanswered (5xx)", http.StatusServiceUnavailable, false},
	{"token unanswered (no answer)", -1, false},
}

// heldRollout is a rollout started and held before its first batch, its
// check run not written yet.
func heldRollout(t *testing.T, dbURL string) *harness {
	h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
	h.hold = true
	h.start(nil)
	h.tick()
	return h
}

// checkJob is the check run job of h's rollout, on h's executor.
func checkJob(h *harness) (*checkWorker, *river.Job[CheckArgs]) {
	return &checkWorker{x: h.x}, checkJobRow(h, 1)
}

// checkJobRow is job id of the check run of h's rollout: a job River does
// not know of, as one it is done with.
func checkJobRow(h *harness, id int64) *river.Job[CheckArgs] {
	return &river.Job[CheckArgs]{JobRow: &rivertype.JobRow{ID: id, Attempt: 1}, Args: CheckArgs{RolloutID: h.id}}
}

// A reset GitHub names hours ahead (a clock far off, a header misread) does
// not park the check run job for that long: it waits at most
// ghlimit.MaxSnooze at a time, as every job waiting for GitHub does, and
// asks again then, both when the refusal is new and when the stored limit
// still holds.
func TestARateLimitedCheckRunWaitsAtMostAnHourAtATime(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := heldRollout(t, dbURL)
		create := answerRoute(h, "POST /repos/{owner}/{repo}/check-runs")
		header := http.Header{}
		header.Set("Retry-After", strconv.Itoa(int((3 * time.Hour).Seconds())))
		create.mu.Lock()
		create.status, create.header = http.StatusForbidden, header
		create.mu.Unlock()
		w, job := checkJob(h)
		for _, when := range []string{"on the refusal", "while the stored limit holds"} {
			var snooze *river.JobSnoozeError
			if err := w.Work(context.Background(), job); !errors.As(err, &snooze) || snooze.Duration != ghlimit.MaxSnooze {
				t.Fatalf("check run job %s, 3 h before the reset: %v; want it snoozed %s", when, err, ghlimit.MaxSnooze)
			}
			h.clock.set(h.clock.Now().Add(ghlimit.MaxSnooze))
		}
		if n := len(h.gh.CheckRuns(testRepo)); n != 0 {
			t.Fatalf("%d check runs while the rate limit is spent", n)
		}
	})
}

// shown is the rollout's check runs, each as "status title".
func shown(h *harness) []string {
	var out []string
	for _, cr := range h.gh.CheckRuns(testRepo) {
		out = append(out, cr.Status+" "+strconv.Quote(cr.Title))
	}
	return out
}

// Two check-run jobs of a rollout run side by side (each move queues one,
// and River runs them at once): one check run is created, not two, the
// one never stored staying in progress for good. The second job waits
// for the first's creation, then writes the run it stored.
func TestCheckRunJobsSideBySideCreateOneRun(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := heldRollout(t, dbURL)
		ctx := context.Background()
		var jobs []*river.Job[CheckArgs]
		for range 2 { // queued, as River keeps them: a live claimant is waited for
			row, err := h.x.deps.River().Insert(ctx, CheckArgs{RolloutID: h.id}, nil)
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, checkJobRow(h, row.Job.ID))
		}
		w, _ := checkJob(h)
		errFirst, errSecond := h.gh.Overtake("POST /repos/{owner}/{repo}/check-runs",
			func() error { return w.Work(ctx, jobs[0]) }, func() error { return w.Work(ctx, jobs[1]) })
		if errFirst != nil {
			t.Fatalf("the first job: %v", errFirst)
		}
		var snooze *river.JobSnoozeError
		if errors.As(errSecond, &snooze) { // as River does, once the snooze is over
			errSecond = w.Work(ctx, jobs[1])
		}
		if errSecond != nil {
			t.Fatalf("the second job: %v", errSecond)
		}
		if runs := shown(h); len(runs) != 1 || h.gh.CheckRuns(testRepo)[0].ID != h.rollout().CheckRunID {
			t.Errorf("check runs: %s; want one, the rollout's (%d)", strings.Join(runs, ", "), h.rollout().CheckRunID)
		}
	})
}

// The rollout moves on while its check-run job writes, and the job of the
// move writes first: GitHub keeps the last write, so the older job must
// not leave its view showing. It reads the rollout again after writing,
// and writes what it shows now.
func TestACheckRunJobOvertakenByAMoveLeavesTheMoveShowing(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := heldRollout(t, dbURL)
		w, job := checkJob(h)
		if err := w.Work(context.Background(), job); err != nil {
			t.Fatalf("first check-run job: %v", err)
		}
		before := h.gh.CheckRuns(testRepo)[0].Summary
		older := func() error { return w.Work(context.Background(), checkJobRow(h, 2)) }
		errOld, errNew := h.gh.Overtake("PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}", older, func() error {
			h.hold = false
			if !h.finishRuns() {
				t.Fatal("setup: no run to finish")
			}
			h.tick()
			return w.Work(context.Background(), checkJobRow(h, 3))
		})
		if errOld != nil || errNew != nil {
			t.Fatalf("check-run jobs: the older %v, the newer %v", errOld, errNew)
		}
		r := h.rollout()
		runs, err := listDispatched(context.Background(), h.x.deps.DB.Read, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		v := checkView(r, runs)
		if *v.output.Summary == before {
			t.Fatal("setup: the move changes nothing the check run shows")
		}
		crs := h.gh.CheckRuns(testRepo)
		if len(crs) != 1 || crs[0].Status != v.state || crs[0].Title != *v.output.Title || crs[0].Summary != *v.output.Summary {
			t.Errorf("check runs: %s; want one showing the rollout as it stands, not as before the move:\n%s",
				strings.Join(shown(h), ", "), crs[0].Summary)
		}
	})
}
