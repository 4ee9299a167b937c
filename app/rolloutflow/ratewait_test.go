package rolloutflow

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// limitedAnswers are GitHub's rate limits, past what the client waits
// out, that it asks to wait out with Retry-After (the client remembers no
// reset for them: only the rollout can keep from asking again).
var limitedAnswers = []struct {
	name   string
	status int
}{
	{"secondary limit (403, Retry-After)", http.StatusForbidden},
	{"too many requests (429, Retry-After)", http.StatusTooManyRequests},
}

// limit makes rt answer GitHub's rate limit (status, Retry-After: 10
// minutes from now) and returns its reset.
func limit(h *harness, rt *routeAnswers, status int) time.Time {
	header, until := retryAfter(h.clock.Now())
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.status, rt.header = status, header
	return until
}

// A run poll GitHub refuses for its rate limit is not asked again on every
// tick (a run event, the next poll) before the reset: each request would be
// spent against a limit that has not reset, and a secondary limit punishes
// that. The rollout polls at the reset, and not before; its batch is left
// as it was, the audit says it once per episode (until a poll gets
// through), and the rollout goes on after the reset.
func TestARateLimitedRunPollWaitsForTheReset(t *testing.T) {
	t.Parallel()
	const route = "/repos/{owner}/{repo}/actions/runs/{run_id}"
	for _, c := range limitedAnswers {
		t.Run(c.name, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
				h.hold = true
				h.start(nil)
				h.tick()
				// A runner picked the canary's run up (as its in_progress
				// event said): it is not timed out while it waits.
				if _, err := h.x.deps.DB.Write.ExecContext(context.Background(), `UPDATE rollout_batches
					SET state = 'in_progress' WHERE rollout_id = $1`, h.id); err != nil {
					t.Fatal(err)
				}
				get := answerRoute(h, "GET "+route)
				h.clock.set(h.rollout().WakeAt)
				until := limit(h, get, c.status)
				h.tickAs(true)
				if n := h.gh.Count("GET", route); n != 1 {
					t.Fatalf("%d run polls, want the canary's run asked about once", n)
				}
				if r := h.rollout(); !r.WakeAt.Equal(until) {
					t.Errorf("next poll at %s, want at the reset %s", r.WakeAt, until)
				}

				// Woken before the reset: by another run's event, and by a
				// poll (or a tick) at what was the next poll.
				h.clock.set(h.clock.Now().Add(time.Minute))
				h.tick()
				h.clock.set(h.clock.Now().Add(runPoll))
				h.tickAs(true)
				if n := h.gh.Count("GET", route); n != 1 {
					t.Errorf("%d run polls before the reset, want the first only", n)
				}
				r := h.rollout()
				if r.Machine.Phase != PhaseDeploy || r.Machine.Stage != 0 || r.Machine.Status == Failed {
					t.Fatalf("rollout %s in phase %s, stage %d (%s); want it deploying the canary still",
						r.Machine.Status, r.Machine.Phase, r.Machine.Stage, r.Machine.Failure)
				}
				limited := h.auditOf("rate-limited")
				if len(limited) != 1 || !strings.Contains(limited[0], testRepo) ||
					!strings.Contains(limited[0], until.UTC().Format(time.RFC3339)) {
					t.Errorf("rate-limited audit lines %q, want one naming %s and %s", limited, testRepo, until.UTC().Format(time.RFC3339))
				}

				// At the reset the run is asked about again, and answered;
				// a limit met after that is a new episode, said again.
				get.set(0)
				h.clock.set(r.WakeAt)
				h.tickAs(true)
				if n := h.gh.Count("GET", route); n != 2 {
					t.Fatalf("%d run polls at the reset, want a second one", n)
				}
				h.clock.set(h.rollout().WakeAt)
				limit(h, get, c.status)
				h.tickAs(true)
				if limited := h.auditOf("rate-limited"); len(limited) != 2 {
					t.Errorf("rate-limited audit lines %q, want a second one for the second limit", limited)
				}

				// The run ended meanwhile, unheard of: the poll after the
				// reset reads it, and the rollout goes on.
				h.endsOnceEach(t, "after the reset", get)
			})
		})
	}
}

// A batch whose dispatch was cut short is adopted by listing its
// workflow's runs on every tick. A list GitHub refuses for its rate limit
// is not asked again before the reset (run events and polls wake the
// rollout meanwhile): the batch is left dispatching, not failed, the audit
// says it once, and its run is adopted after the reset.
func TestARateLimitedAdoptionWaitsForTheReset(t *testing.T) {
	t.Parallel()
	const route = "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs"
	for _, c := range limitedAnswers {
		t.Run(c.name, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
				h.gh.SetClock(h.clock.Now)
				h.gh.SetRunName(testRepo, "deploy.yml", "${{ inputs.batch }} ${{ inputs.release_id }}")
				h.hold = true
				h.start(nil)
				h.tick()
				if _, err := h.x.deps.DB.Write.ExecContext(context.Background(), `UPDATE rollout_batches
					SET run_id = 0, state = 'dispatching' WHERE rollout_id = $1`, h.id); err != nil {
					t.Fatal(err)
				}
				list := answerRoute(h, "GET "+route)
				h.clock.set(h.clock.Now().Add(dispatchGrace))
				until := limit(h, list, c.status)
				h.tick()
				if n := h.gh.Count("GET", route); n != 1 {
					t.Fatalf("%d lists of runs, want one", n)
				}
				if r := h.rollout(); !r.WakeAt.Equal(until) {
					t.Errorf("next tick at %s, want at the reset %s", r.WakeAt, until)
				}
				for range 3 {
					h.clock.set(h.clock.Now().Add(2 * time.Minute))
					h.tick() // as another run's event wakes it
				}
				if n := h.gh.Count("GET", route); n != 1 {
					t.Errorf("%d lists of runs before the reset, want the first only", n)
				}
				runs, err := loadRuns(context.Background(), h.x.deps.DB.Read, h.id)
				if err != nil {
					t.Fatal(err)
				}
				if got := runs[Ref{Kind: KindDeploy}].State; got != RunDispatching {
					t.Errorf("canary batch %s while the rate limit holds, want left %s", got, RunDispatching)
				}
				limited := h.auditOf("rate-limited")
				if len(limited) != 1 || !strings.Contains(limited[0], until.UTC().Format(time.RFC3339)) {
					t.Errorf("rate-limited audit lines %q, want one naming %s", limited, until.UTC().Format(time.RFC3339))
				}

				// The run ended meanwhile, unheard of: it is adopted after
				// the reset, and every batch is dispatched once.
				h.endsOnceEach(t, "after the reset", list)
			})
		})
	}
}

// The list of the runs answered 404, and the repository, asked for to
// tell access lost from a workflow gone, GitHub's rate limit: nothing is
// known of the batch, and neither is asked again before the reset (each
// tick asked both). The batch is left dispatching, not failed, and
// adopted after the reset.
func TestAnAdoption404WithTheRepositoryRateLimitedWaitsForTheReset(t *testing.T) {
	t.Parallel()
	const list, repo = "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs", "/repos/{owner}/{repo}"
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
		h.gh.SetClock(h.clock.Now)
		h.gh.SetRunName(testRepo, "deploy.yml", "${{ inputs.batch }} ${{ inputs.release_id }}")
		h.hold = true
		h.start(nil)
		h.tick()
		if _, err := h.x.deps.DB.Write.ExecContext(context.Background(), `UPDATE rollout_batches
			SET run_id = 0, state = 'dispatching' WHERE rollout_id = $1`, h.id); err != nil {
			t.Fatal(err)
		}
		lists, repos := answerRoute(h, "GET "+list), answerRoute(h, "GET "+repo)
		lists.set(http.StatusNotFound)
		h.clock.set(h.clock.Now().Add(dispatchGrace))
		until := limit(h, repos, http.StatusTooManyRequests)
		h.tick()
		if r := h.rollout(); !r.WakeAt.Equal(until) {
			t.Errorf("next tick at %s, want at the reset %s", r.WakeAt, until)
		}
		for range 3 {
			h.clock.set(h.clock.Now().Add(2 * time.Minute))
			h.tick() // as another run's event wakes it
		}
		if l, r := h.gh.Count("GET", list), h.gh.Count("GET", repo); l != 1 || r != 1 {
			t.Errorf("%d lists of runs and %d reads of the repository before the reset, want one each", l, r)
		}
		runs, err := loadRuns(context.Background(), h.x.deps.DB.Read, h.id)
		if err != nil {
			t.Fatal(err)
		}
		if got := runs[Ref{Kind: KindDeploy}].State; got != RunDispatching {
			t.Errorf("canary batch %s while the rate limit holds, want left %s", got, RunDispatching)
		}
		if n := len(h.auditOf("rate-limited")); n != 1 {
			t.Errorf("%d rate-limited audit lines, want one", n)
		}

		h.endsOnceEach(t, "after the reset", lists, repos)
	})
}

// A run poll answered 404, and the repository, asked for to tell a run
// deleted from access lost, GitHub's rate limit: nothing is known of the
// run, and neither is asked again before the reset (each poll asked
// both); the batch is left as it was, and read after the reset.
func TestARunPoll404WithTheRepositoryRateLimitedWaitsForTheReset(t *testing.T) {
	t.Parallel()
	const run, repo = "/repos/{owner}/{repo}/actions/runs/{run_id}", "/repos/{owner}/{repo}"
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
		h.hold = true
		h.start(nil)
		h.tick()
		// A runner picked the canary's run up (as its in_progress event
		// said): it is not timed out while it waits.
		if _, err := h.x.deps.DB.Write.ExecContext(context.Background(), `UPDATE rollout_batches
			SET state = 'in_progress' WHERE rollout_id = $1`, h.id); err != nil {
			t.Fatal(err)
		}
		runs, repos := answerRoute(h, "GET "+run), answerRoute(h, "GET "+repo)
		runs.set(http.StatusNotFound)
		h.clock.set(h.rollout().WakeAt)
		until := limit(h, repos, http.StatusTooManyRequests)
		h.tickAs(true)
		if r := h.rollout(); !r.WakeAt.Equal(until) {
			t.Errorf("next poll at %s, want at the reset %s", r.WakeAt, until)
		}
		h.clock.set(h.clock.Now().Add(runPoll))
		h.tickAs(true) // at what was the next poll
		if n, r := h.gh.Count("GET", run), h.gh.Count("GET", repo); n != 1 || r != 1 {
			t.Errorf("%d run polls and %d reads of the repository before the reset, want one each", n, r)
		}
		if r := h.rollout(); r.Machine.Status == Failed {
			t.Fatalf("rollout failed (%s) while the rate limit holds", r.Machine.Failure)
		}

		h.endsOnceEach(t, "after the reset", runs, repos)
	})
}

// endsOnceEach lets the canary's run, which ended meanwhile unheard of, be
// read: GitHub answers routes again, the harness stops holding ticks, the
// rollout runs from its next tick (when), and it must succeed with every
// batch dispatched once.
func (h *harness) endsOnceEach(t *testing.T, when string, routes ...*routeAnswers) {
	t.Helper()
	h.gh.CompleteRun(testRepo, h.gh.Dispatches(testRepo)[0].RunID, "success")
	for _, r := range routes {
		r.set(0)
	}
	h.hold = false
	h.clock.set(h.rollout().WakeAt)
	if r := h.run(nil); r.Machine.Status != Succeeded || !slices.Equal(h.dispatches(), deployAll) {
		t.Errorf("status %s (%s), dispatches %v %s; want succeeded with each batch once",
			r.Machine.Status, r.Machine.Failure, h.dispatches(), when)
	}
}
