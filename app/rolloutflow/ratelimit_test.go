package rolloutflow

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/ghlimit"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A rate limit beyond what the GitHub client waits out is GitHub saying
// "later", not "no": the dispatch (or the App's request for the
// installation's token) was not acted on. The batch is not failed (no
// on_failure) nor taken for one whose installation is gone, but withdrawn
// and dispatched after the reset; the audit says it was rate limited, and
// until when.
func TestARateLimitedDispatchFailsNoBatch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		token  bool // the token request is limited, not the dispatch
		status int
		header func(now time.Time) (http.Header, time.Time) // and when the request may be sent again
		// message is GitHub's ("": the status's text).
		message string
		// fresh: go-github's client keeps a spent primary limit until its
		// reset by the wall clock, which the fake clock has left behind.
		// A fresh executor (as after a restart) has no such memory.
		fresh bool
	}{
		{"primary limit spent (403)", false, http.StatusForbidden, primaryLimit, "", true},
		{"secondary limit (403, Retry-After)", false, http.StatusForbidden, retryAfter, "", false},
		{"too many requests (429, Retry-After)", false, http.StatusTooManyRequests, retryAfter, "", false},
		{"installation token, primary limit spent (403)", true, http.StatusForbidden, primaryLimit, "", false},
		// GitHub may name its secondary limit in the message alone, with
		// no header saying until when.
		{"secondary limit named in the message only (403)", false, http.StatusForbidden, secondaryMessage, secondaryLimited, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				h := newHarnessOn(t, dbURL, "rollback-all", "", time.Minute)
				a := answerAccess(h)
				tokens := answerTokens(h)
				h.start(nil)
				header, until := c.header(h.clock.Now())
				if c.token {
					tokens.mu.Lock()
					tokens.status, tokens.header = c.status, header
					tokens.mu.Unlock()
					h.x = h.executor() // no token of the installation cached
				} else {
					a.mu.Lock()
					a.dispatch, a.header, a.message = c.status, header, c.message
					a.mu.Unlock()
				}
				h.tick()
				r := h.rollout()
				if r.Machine.Phase != PhaseDeploy || r.Machine.Stage != 0 || r.Machine.Status == Failed {
					t.Fatalf("rollout %s in phase %s, stage %d (%s); want it deploying the canary still",
						r.Machine.Status, r.Machine.Phase, r.Machine.Stage, r.Machine.Failure)
				}
				h.noBatch(t, "while GitHub's rate limit is spent")
				if !r.WakeAt.Equal(until) {
					t.Errorf("next tick at %s, want when the limit lifts %s", r.WakeAt, until)
				}
				limited := h.auditOf("rate-limited")
				if len(limited) != 1 || !strings.Contains(limited[0], "deploy@canary#0") ||
					!strings.Contains(limited[0], r.WakeAt.UTC().Format(time.RFC3339)) {
					t.Errorf("rate-limited audit lines %q, want one naming the canary's batch and %s", limited, r.WakeAt.UTC().Format(time.RFC3339))
				}
				if lost := h.auditOf("access-lost"); len(lost) != 0 {
					t.Errorf("access-lost audit lines %q for a rate limit", lost)
				}

				// The limit is over: the batch is dispatched, once, and so is
				// every other.
				a.set(0, 0)
				tokens.set(0)
				if c.fresh {
					h.x = h.executor()
				}
				h.eachBatchOnce(t, a, false)
			})
		})
	}
}

// A rollout woken before the reset (another run's poll or event) does not
// try the dispatch again: GitHub would count it against the limit (a
// secondary one punishes that with a longer one) and, still limiting it,
// name a later time (Retry-After counts from its answer). The batch waits
// for the reset the first refusal named, stored as the installation's,
// and the audit says the rate limit once per episode, until a request
// gets through. A rate limit met again after a dispatch got through is a
// new episode, said again.
func TestARateLimitIsSaidOncePerEpisode(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
		a := answerAccess(h)
		limit := func() {
			header, _ := retryAfter(h.clock.Now())
			a.mu.Lock()
			a.dispatch, a.header = http.StatusTooManyRequests, header
			a.mu.Unlock()
		}
		limit()
		h.start(nil)
		h.tick()
		first := h.rollout().WakeAt
		for range 2 {
			h.clock.set(h.clock.Now().Add(4 * time.Minute))
			h.tick() // woken early, as by another run's event
		}
		if n := h.gh.Count("POST", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches"); n != 1 {
			t.Fatalf("%d dispatches before the reset, want the canary's first only", n)
		}
		r := h.rollout()
		if !r.WakeAt.Equal(first) {
			t.Errorf("next tick at %s, want at the reset %s", r.WakeAt, first)
		}
		h.noBatch(t, "while GitHub's rate limit is spent")
		limited := h.auditOf("rate-limited")
		if len(limited) != 1 || !strings.Contains(limited[0], "deploy@canary#0") ||
			!strings.Contains(limited[0], first.UTC().Format(time.RFC3339)) {
			t.Errorf("rate-limited audit lines %q, want one, naming the canary's batch and %s", limited, first.UTC().Format(time.RFC3339))
		}

		// The canary is dispatched after the reset; the next batch meets
		// the limit anew.
		a.set(0, 0)
		h.clock.set(r.WakeAt)
		h.tick()
		limit()
		h.run(func(Rollout) bool { return len(h.auditOf("rate-limited")) > 1 })
		limited = h.auditOf("rate-limited")
		if len(limited) != 2 || !strings.Contains(limited[1], "deploy@eu-1/eu-1/eu-1a#0") {
			t.Errorf("rate-limited audit lines %q, want a second one naming the next batch", limited)
		}

		a.set(0, 0)
		h.eachBatchOnce(t, a, false)
	})
}

// primaryLimit is a spent primary rate limit that resets in 30 minutes;
// the request may be sent again ghlimit.ResetMargin after the reset,
// which has GitHub's clock and whole seconds, whichever of go-github's
// errors (or ghinstallation's) says it.
func primaryLimit(now time.Time) (http.Header, time.Time) {
	reset := now.Add(30 * time.Minute).Truncate(time.Second)
	h := http.Header{}
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	return h, reset.Add(ghlimit.ResetMargin)
}

// secondaryLimited is GitHub's message on a secondary-limit refusal.
const secondaryLimited = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."

// secondaryMessage is a refusal whose headers name no time: it lifts
// ghlimit.SecondaryLimitWait after it. That is within what the client
// holds a request (ghclient.DefaultRateLimitMaxWait), so the client waits
// it out and sends the dispatch once more; refused again, it gives that
// refusal back, which lifts SecondaryLimitWait after the second answer.
func secondaryMessage(now time.Time) (http.Header, time.Time) {
	return http.Header{}, now.Add(2 * ghlimit.SecondaryLimitWait)
}

// retryAfter asks for 10 minutes, past what the client waits.
func retryAfter(now time.Time) (http.Header, time.Time) {
	h := http.Header{}
	h.Set("Retry-After", "600")
	return h, now.Add(10 * time.Minute)
}
