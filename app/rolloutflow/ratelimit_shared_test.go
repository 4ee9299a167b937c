package rolloutflow

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/internal/testdb"
)

const dispatchRoute = "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches"

// GitHub's rate limit is the installation's: a dispatch it refused for it
// says the run polls would be refused too. The limit a dispatch met holds
// the rollout's polls until the reset, as one a poll met does, and the
// batch is not dispatched again before it, whatever wakes the rollout (a
// poll, another run's event); the audit says it once. Here the last stage
// dispatches its two passes side by side: the first gets through, its run
// in flight, and the second meets the limit.
func TestARateLimitedDispatchHoldsThePollsUntilTheReset(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
		a := answerAccess(h)
		h.start(nil)
		var until time.Time
		h.x.afterClaim = func(string) {
			if len(a.started()) == len(deployAll)-1 && until.IsZero() {
				// The claim of the last batch, beside one in flight.
				var header http.Header
				header, until = retryAfter(h.clock.Now())
				a.mu.Lock()
				a.dispatch, a.header = http.StatusTooManyRequests, header
				a.mu.Unlock()
			}
		}
		h.run(func(Rollout) bool { return !until.IsZero() })
		h.hold = true // the first pass's run stays in flight
		if got := a.started(); len(got) != len(deployAll)-1 {
			t.Fatalf("dispatches %v, want every batch but the last", got)
		}
		if r := h.rollout(); !r.WakeAt.Equal(until) {
			t.Errorf("next tick at %s, want at the reset %s", r.WakeAt, until)
		}
		polls, dispatches := h.gh.Count("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}"), h.gh.Count("POST", dispatchRoute)

		// Woken before the reset: at what would be the next poll, and by
		// another run's event.
		h.clock.set(h.clock.Now().Add(runPoll))
		h.tickAs(true)
		h.clock.set(h.clock.Now().Add(time.Minute))
		h.tick()
		if n := h.gh.Count("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}") - polls; n != 0 {
			t.Errorf("%d run polls before the reset, want none", n)
		}
		if n := h.gh.Count("POST", dispatchRoute) - dispatches; n != 0 {
			t.Errorf("%d dispatches before the reset, want none", n)
		}
		r := h.rollout()
		if r.Machine.Status == Failed || !r.WakeAt.Equal(until) {
			t.Errorf("rollout %s (%s), next tick at %s; want it waiting for the reset %s",
				r.Machine.Status, r.Machine.Failure, r.WakeAt, until)
		}
		limited := h.auditOf("rate-limited")
		if len(limited) != 1 || !strings.Contains(limited[0], "deploy@resto/us-1/us-1a#0") ||
			!strings.Contains(limited[0], until.UTC().Format(time.RFC3339)) {
			t.Errorf("rate-limited audit lines %q, want one naming the last batch and %s", limited, until.UTC().Format(time.RFC3339))
		}

		// The run ended meanwhile, unheard of: after the reset it is
		// read, and the last batch dispatched.
		ds, err := listDispatched(context.Background(), h.x.deps.DB.Read, h.id)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.State == RunQueued {
				h.gh.CompleteRun(testRepo, d.RunID, "success")
			}
		}
		a.set(0, 0)
		h.hold = false
		h.clock.set(until)
		if r := h.run(nil); r.Machine.Status != Succeeded || !slices.Equal(a.started(), deployAll) {
			t.Errorf("status %s (%s), dispatches %v after the reset; want succeeded with each batch once",
				r.Machine.Status, r.Machine.Failure, a.started())
		}
	})
}

// The rollout's check run is written with the installation's token too:
// while a limit a dispatch met has not reset, the check run job waits for
// the reset (a snooze, which costs no attempt) instead of spending a
// request against it, and writes the check run then.
func TestACheckRunWaitsForTheRateLimitADispatchMet(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
		a := answerAccess(h)
		header, until := retryAfter(h.clock.Now())
		a.mu.Lock()
		a.dispatch, a.header = http.StatusTooManyRequests, header
		a.mu.Unlock()
		h.start(nil)
		h.tick()
		h.clock.set(h.clock.Now().Add(time.Minute))
		w, job := checkJob(h)
		want := until.Sub(h.clock.Now())
		var snooze *river.JobSnoozeError
		if err := w.Work(context.Background(), job); !errors.As(err, &snooze) || snooze.Duration != want {
			t.Fatalf("check run job while the installation's rate limit holds: %v; want it snoozed until the reset (%s)", err, want)
		}
		if n := h.gh.Count("POST", "/repos/{owner}/{repo}/check-runs"); n != 0 {
			t.Fatalf("%d check runs written while the rate limit holds, want none", n)
		}

		a.set(0, 0)
		h.clock.set(until)
		if err := w.Work(context.Background(), job); err != nil {
			t.Fatalf("check run job after the reset: %v", err)
		}
		if crs := h.gh.CheckRuns(testRepo); len(crs) != 1 || crs[0].Name != CheckName {
			t.Errorf("check runs %+v after the reset, want the rollout's", crs)
		}
	})
}

// A limit the check run job met is the installation's too: the rollout
// dispatches no batch before its reset (it would be refused, and counted
// against the limit), says so once, and goes on after the reset.
func TestADispatchWaitsForTheRateLimitTheCheckRunMet(t *testing.T) {
	t.Parallel()
	for _, c := range limitedAnswers {
		t.Run(c.name, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
				create := answerRoute(h, "POST /repos/{owner}/{repo}/check-runs")
				until := limit(h, create, c.status)
				h.start(nil)
				w, job := checkJob(h)
				var snooze *river.JobSnoozeError
				if err := w.Work(context.Background(), job); !errors.As(err, &snooze) {
					t.Fatalf("check run job on GitHub's rate limit: %v; want it snoozed", err)
				}
				h.tick()
				h.clock.set(h.clock.Now().Add(time.Minute))
				h.tick() // as an event wakes it
				if n := h.gh.Count("POST", dispatchRoute); n != 0 {
					t.Fatalf("%d dispatches before the reset, want none", n)
				}
				r := h.rollout()
				if r.Machine.Phase != PhaseDeploy || r.Machine.Status == Failed || !r.WakeAt.Equal(until) {
					t.Errorf("rollout %s in phase %s (%s), next tick at %s; want it deploying the canary at the reset %s",
						r.Machine.Status, r.Machine.Phase, r.Machine.Failure, r.WakeAt, until)
				}
				h.noBatch(t, "while GitHub's rate limit is spent")
				limited := h.auditOf("rate-limited")
				if len(limited) != 1 || !strings.Contains(limited[0], "deploy@canary#0") ||
					!strings.Contains(limited[0], until.UTC().Format(time.RFC3339)) {
					t.Errorf("rate-limited audit lines %q, want one naming the canary's batch and %s", limited, until.UTC().Format(time.RFC3339))
				}

				create.set(0)
				h.clock.set(until)
				if r := h.run(nil); r.Machine.Status != Succeeded || !slices.Equal(h.dispatches(), deployAll) {
					t.Errorf("status %s (%s), dispatches %v after the reset; want succeeded with each batch once",
						r.Machine.Status, r.Machine.Failure, h.dispatches())
				}
			})
		})
	}
}
