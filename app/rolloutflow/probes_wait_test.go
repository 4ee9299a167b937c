package rolloutflow

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// bakingRunners deploys the runner harness's one stage, on dbURL, and
// leaves it baking, its first reading due at its next tick.
func bakingRunners(t *testing.T, dbURL string) *harness {
	a, b := twoTargets(t)
	h := newRunnerHarness(t, dbURL, a, b)
	h.tickAs(false)
	for h.finishRuns() {
		h.tickAs(false)
	}
	if p := h.rollout().Machine.Phase; p != PhaseBake {
		t.Fatalf("phase %s after the deploy, want bake", p)
	}
	return h
}

// readingsOf counts the rollout's readings taken, and the red ones.
func (h *harness) readingsOf() (all, red int) {
	h.t.Helper()
	if err := h.x.deps.DB.Read.QueryRow(`SELECT COUNT(*), COALESCE(SUM(CASE WHEN green THEN 0 ELSE 1 END), 0)
		FROM rollout_readings WHERE rollout_id = $1`, h.id).Scan(&all, &red); err != nil {
		h.t.Fatal(err)
	}
	return all, red
}

// notRedYet fails the test unless the rollout still bakes with no reading
// taken (when says what GitHub did).
func (h *harness) notRedYet(t *testing.T, when string) Rollout {
	t.Helper()
	r := h.rollout()
	if r.Machine.Phase != PhaseBake || r.Machine.Bake.Red != 0 {
		t.Fatalf("rollout %s in phase %s, %d red (%s) %s; want it baking, no reading red",
			r.Machine.Status, r.Machine.Phase, r.Machine.Bake.Red, r.Machine.Failure, when)
	}
	if all, _ := h.readingsOf(); all != 0 {
		t.Fatalf("%d readings taken %s, want none: no probe was sent", all, when)
	}
	return r
}

// succeedsAfter runs the rollout on from its next tick with runners that
// answer, and wants it to succeed without a red reading.
func (h *harness) succeedsAfter(t *testing.T, when string) {
	t.Helper()
	h.clock.set(h.rollout().WakeAt)
	r := h.runWithRunners(false)
	if r.Machine.Status != Succeeded {
		t.Fatalf("status %s (%s) %s, want succeeded", r.Machine.Status, r.Machine.Failure, when)
	}
	if _, red := h.readingsOf(); red != 0 {
		t.Errorf("%d red readings %s, want none", red, when)
	}
}

// A probe workflow dispatch GitHub refuses for its rate limit sent no
// probe: that says nothing about the release's health. The reading is not
// red (failures_to_stop is 1 here: a red one would fail the stage); the
// limit is stored as the installation's, so the probe workflow is not
// asked for again before the reset, whatever wakes the rollout; the audit
// says it as a rate limit, past the reading's interval, not as a refusal;
// and the probes are dispatched at the reset and read then.
func TestARateLimitedProbeDispatchWaitsForTheReset(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		status int
		header func(now time.Time) (http.Header, time.Time)
		// fresh: go-github's client keeps a spent primary limit until its
		// reset by the wall clock, which the fake clock has left behind; a
		// fresh executor (as after a restart) has no such memory.
		fresh bool
	}{
		{"primary limit spent (403, x-ratelimit-remaining: 0)", http.StatusForbidden, primaryLimit, true},
		{"secondary limit (403, Retry-After)", http.StatusForbidden, retryAfter, false},
		{"too many requests (429, Retry-After)", http.StatusTooManyRequests, retryAfter, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				h := bakingRunners(t, dbURL)
				rt := answerRoute(h, "POST "+dispatchRoute)
				h.clock.set(h.rollout().WakeAt) // the first reading is due
				header, until := c.header(h.clock.Now())
				rt.mu.Lock()
				rt.status, rt.header = c.status, header
				rt.mu.Unlock()
				sent := h.gh.Count("POST", dispatchRoute)
				h.tickAs(true)
				r := h.notRedYet(t, "after a rate-limited probe dispatch")
				if !r.WakeAt.Equal(until) {
					t.Errorf("next tick at %s, want at the reset %s", r.WakeAt, until)
				}
				lim, err := readLimit(context.Background(), h.x.deps.DB.Read, githubtest.InstallationID)
				if err != nil || !lim.reset.Equal(until) {
					t.Errorf("stored rate limit %+v (%v), want the installation's until %s", lim, err, until)
				}

				// Woken before the reset (a probe post, another rollout's
				// event): nothing is sent into the limit.
				for range 3 {
					h.clock.set(h.clock.Now().Add(2 * time.Minute))
					h.tick()
				}
				if n := h.gh.Count("POST", dispatchRoute) - sent; n != 1 {
					t.Errorf("%d probe dispatches before the reset, want the first only", n)
				}
				h.notRedYet(t, "while the rate limit holds")
				limited := h.auditOf("rate-limited")
				if len(limited) != 1 || !strings.Contains(limited[0], "reading 0.0.-1.1") ||
					!strings.Contains(limited[0], until.UTC().Format(time.RFC3339)) || !strings.Contains(limited[0], "interval") {
					t.Errorf("rate-limited audit lines %q, want one naming reading 0.0.-1.1, %s and its interval",
						limited, until.UTC().Format(time.RFC3339))
				}
				for _, line := range h.auditOf("dispatch") {
					if strings.Contains(line, "0.0.-1.1") {
						t.Errorf("dispatch audit line %q: a rate limit is not a refusal", line)
					}
				}

				rt.set(0)
				if c.fresh {
					h.x = h.executor()
				}
				h.succeedsAfter(t, "once the rate limit reset")
				if lim, err := readLimit(context.Background(), h.x.deps.DB.Read, githubtest.InstallationID); err != nil || !lim.reset.IsZero() {
					t.Errorf("stored rate limit %+v (%v) after a probe dispatch got through, want none", lim, err)
				}
			})
		})
	}
}

// The installation's rate limit that another request met (a batch's
// dispatch, a run poll, another rollout's) holds for the probe workflow
// too: it is not dispatched before the reset, and the reading waits for it
// rather than going red.
func TestAProbeDispatchWaitsForTheStoredRateLimit(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := bakingRunners(t, dbURL)
		h.clock.set(h.rollout().WakeAt)
		until := h.clock.Now().Add(10 * time.Minute)
		err := h.x.deps.DB.InTx(context.Background(), func(tx *sql.Tx) error {
			_, err := storeLimit(context.Background(), tx, githubtest.InstallationID, h.clock.Now(), until)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		sent := h.gh.Count("POST", dispatchRoute)
		h.tickAs(true)
		h.clock.set(h.clock.Now().Add(time.Minute))
		h.tick()
		if n := h.gh.Count("POST", dispatchRoute) - sent; n != 0 {
			t.Errorf("%d probe dispatches while the installation's rate limit holds, want none", n)
		}
		r := h.notRedYet(t, "while the installation's rate limit holds")
		if !r.WakeAt.Equal(until) {
			t.Errorf("next tick at %s, want at the reset %s", r.WakeAt, until)
		}
		if limited := h.auditOf("rate-limited"); len(limited) != 1 || !strings.Contains(limited[0], "reading 0.0.-1.1") {
			t.Errorf("rate-limited audit lines %q, want one naming reading 0.0.-1.1", limited)
		}
		h.succeedsAfter(t, "after the reset")
	})
}

// A probe workflow that cannot be dispatched because the App lost access
// (the repository was removed from the installation: 404 on the dispatch
// and on the repository; the installation was deleted or suspended: its
// token refused) sent no probe, and nothing can be deployed or rolled back
// meanwhile either. As for a batch, the reading is not red (which would
// fail the stage and start on_failure's rollback into the same lost
// access), the probe workflow is asked for again at each poll, not every
// few seconds nor at each reading, the audit says once that access was
// lost, and the reading is taken once access is back.
func TestAProbeDispatchAfterAccessLostWaitsForAccess(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		route string // refused while access is lost
		extra string // also refused, 404 (the repository)
		want  string // in the access-lost line
	}{
		{"repository removed", "POST " + dispatchRoute, "GET /repos/{owner}/{repo}", testRepo},
		{"installation deleted", "POST /app/installations/{installation_id}/access_tokens", "",
			fmt.Sprintf("installation %d", githubtest.InstallationID)},
		{"installation suspended", "POST /app/installations/{installation_id}/access_tokens", "",
			fmt.Sprintf("installation %d", githubtest.InstallationID)},
	} {
		t.Run(c.name, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				h := bakingRunners(t, dbURL)
				status := http.StatusNotFound
				if c.name == "installation suspended" {
					status = http.StatusForbidden
				}
				lost := answerRoute(h, c.route)
				lost.set(status)
				if c.extra != "" {
					answerRoute(h, c.extra).set(http.StatusNotFound)
				}
				h.x = h.executor() // no token of the installation cached
				method, route, _ := strings.Cut(c.route, " ")
				before := h.gh.Count(method, route)
				due := h.rollout().WakeAt
				h.clock.set(due)
				h.tickAs(true)
				for range 4 {
					h.clock.set(h.rollout().WakeAt)
					h.tickAs(true)
				}
				r := h.notRedYet(t, "while access is lost")
				if !r.WakeAt.After(h.clock.Now()) || r.WakeAt.After(h.clock.Now().Add(runPoll)) {
					t.Errorf("next tick at %s, want one within %s of %s", r.WakeAt, runPoll, h.clock.Now())
				}
				elapsed := h.clock.Now().Sub(due)
				if n, most := h.gh.Count(method, route)-before, int(elapsed/runPoll)+1; elapsed < 4*runPoll || n > most {
					t.Errorf("%d requests on %s in %s while access is lost, want no more than one per poll (%d)", n, route, elapsed, most)
				}
				lines := h.auditOf("access-lost")
				if len(lines) != 1 || !strings.Contains(lines[0], "reading 0.0.-1.1") || !strings.Contains(lines[0], c.want) {
					t.Errorf("access-lost audit lines %q, want one naming reading 0.0.-1.1 and %s", lines, c.want)
				}

				lost.set(0)
				h.succeedsAfter(t, "once access is back")
			})
		})
	}
}

// A probe round's rate-limited line that says its reading waits past the
// end of its interval (not red for it) shared the episode's once-only
// rule with every other rate-limited line, so the remark was swallowed
// when the episode had been said already: by the runs' polls that met the
// limit first, or by the round's own line from before GitHub moved the
// reset past the interval. It reaches the audit once, when it first
// applies, and is not said again at each poll.
func TestAProbeRoundSaysOnceThatItsReadingWaitsPastItsInterval(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		// first says the episode before the reset is past the interval.
		first func(t *testing.T, h *harness)
	}{
		{"said by the runs' polls", func(t *testing.T, h *harness) {
			lim := storeLimitAt(t, h, h.clock.Now().Add(10*time.Minute))
			if err := h.x.sayLimited(context.Background(), h.rollout(), lim); err != nil {
				t.Fatal(err)
			}
		}},
		{"said by the round before its own dispatch met the limit again", func(t *testing.T, h *harness) {
			storeLimitAt(t, h, h.clock.Now().Add(10*time.Second)) // within the reading's 30 s
			h.tickAs(true)
			if limited := h.auditOf("rate-limited"); len(limited) != 1 || strings.Contains(limited[0], "interval") {
				t.Fatalf("rate-limited audit lines %q, want the round's, with no word of its interval", limited)
			}
			// At the reset the round's dispatch meets the limit again,
			// GitHub asking for 10 minutes.
			limitedAgainAtTheReset(t, h)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				h := bakingRunners(t, dbURL)
				h.clock.set(h.rollout().WakeAt) // the first reading is due
				c.first(t, h)
				h.tickAs(true)
				for range 3 {
					h.clock.set(h.clock.Now().Add(2 * time.Minute))
					h.tick()
				}
				// Its dispatch at the reset meets the limit again: the
				// reading still waits past its interval, said already.
				limitedAgainAtTheReset(t, h)
				h.notRedYet(t, "while the rate limit holds")
				var past []string
				for _, l := range h.auditOf("rate-limited") {
					if strings.Contains(l, "reading 0.0.-1.1") && strings.Contains(l, "past the end of the reading's interval") {
						past = append(past, l)
					}
				}
				if len(past) != 1 {
					t.Errorf("rate-limited audit lines %q, want one of reading 0.0.-1.1 saying it waits past its interval",
						h.auditOf("rate-limited"))
				}
				h.succeedsAfter(t, "after the reset")
			})
		})
	}
}

// storeLimitAt stores the installation's rate limit as a request met it
// now, until until, and returns it as stored.
func storeLimitAt(t *testing.T, h *harness, until time.Time) installationLimit {
	t.Helper()
	var lim installationLimit
	err := h.x.deps.DB.InTx(context.Background(), func(tx *sql.Tx) error {
		var err error
		lim, err = storeLimit(context.Background(), tx, githubtest.InstallationID, h.clock.Now(), until)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// limitedAgainAtTheReset wakes the rollout at the reset of the stored
// rate limit, where the probe round's dispatch meets the limit again,
// GitHub asking for 10 minutes more: the same episode, as no request got
// through.
func limitedAgainAtTheReset(t *testing.T, h *harness) {
	t.Helper()
	before, err := readLimit(context.Background(), h.x.deps.DB.Read, githubtest.InstallationID)
	if err != nil || before.reset.IsZero() {
		t.Fatalf("stored rate limit %+v (%v), want one", before, err)
	}
	rt := answerRoute(h, "POST "+dispatchRoute)
	h.clock.set(before.reset)
	header, until := retryAfter(h.clock.Now())
	rt.mu.Lock()
	rt.status, rt.header = http.StatusTooManyRequests, header
	rt.mu.Unlock()
	sent := h.gh.Count("POST", dispatchRoute)
	h.tickAs(true)
	rt.set(0)
	after, err := readLimit(context.Background(), h.x.deps.DB.Read, githubtest.InstallationID)
	if n := h.gh.Count("POST", dispatchRoute) - sent; n != 1 || err != nil || !after.reset.Equal(until) || !after.began.Equal(before.began) {
		t.Fatalf("%d probe dispatches at the reset, stored rate limit %+v (%v); want one, the limit until %s of the episode begun at %s",
			n, after, err, until, before.began)
	}
}
