package rolloutflow

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// A batch GitHub does not answer for (5xx, no answer on the installation's
// token, on the default branch, or on the repository after a dispatch
// 404) fails nothing however long the outage, but is not silent either:
// the audit says it once for the whole outage (the error may change from
// poll to poll), the status says the rollout waits for it, and once the
// dispatch gets through its audit line says GitHub answers again.
func TestAnOutageOnABatchIsSaidOnceAndShownInTheStatus(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		ref  string
		// down makes GitHub give no answer, first with a 503, then with
		// none at all (-1); 0 answers again.
		down func(a *access, tokens *routeAnswers, status int)
	}{
		{"token", "main", func(a *access, tokens *routeAnswers, status int) { tokens.set(status) }},
		{"default branch", "", func(a *access, tokens *routeAnswers, status int) { a.set(status, 0) }},
		{"repository after a dispatch 404", "main", func(a *access, tokens *routeAnswers, status int) {
			if status == 0 {
				a.set(0, 0)
				return
			}
			a.set(status, http.StatusNotFound)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				h := newHarnessOn(t, dbURL, "rollback-all", "", time.Minute)
				a := answerAccess(h)
				tokens := answerTokens(h)
				h.start(func(s *Snapshot) { s.Settings.Ref = c.ref })
				c.down(a, tokens, http.StatusServiceUnavailable)
				h.x = h.executor() // no token of the installation cached
				began := h.clock.Now()
				// Polls for longer than queue_timeout, the error changing
				// half way.
				h.tick()
				for i := range 4 {
					if i == 2 {
						c.down(a, tokens, -1)
					}
					h.clock.set(h.rollout().WakeAt)
					h.tickAs(true)
				}
				r := h.rollout()
				if r.Machine.Status != Running || r.Machine.Phase != PhaseDeploy || r.WakeAt.IsZero() {
					t.Fatalf("rollout %s in phase %s (%s), next tick %s; want it running, the canary asked for again",
						r.Machine.Status, r.Machine.Phase, r.Machine.Failure, r.WakeAt)
				}
				h.noBatch(t, "while GitHub does not answer")
				lines := h.auditOf("unanswered")
				if len(lines) != 1 || !strings.HasPrefix(lines[0], "deploy@canary#0 not dispatched: GitHub did not answer (") ||
					!strings.Contains(lines[0], "503") || !strings.HasSuffix(lines[0], "asked for again at each poll") {
					t.Fatalf("unanswered audit lines %q, want one for the whole outage naming the canary's batch and the 503", lines)
				}
				st, waiting := h.statusJSON(t)
				// Since the first try, when the client's retries of it
				// (on the fake clock) were over.
				var since time.Time
				for _, l := range st.Audit {
					if l.Type == "unanswered" {
						since = l.At
					}
				}
				if since.Before(began) || since.After(began.Add(time.Minute)) {
					t.Errorf("unanswered audit line at %s, want it at the first try, %s", since, began)
				}
				if st.Rollout.Status != Running || st.Rollout.Paused != "" ||
					waiting != "since "+since.UTC().Format(time.RFC3339)+": "+lines[0] {
					t.Errorf("status %s, paused %q, waiting %q; want running, not paused, waiting since %s for %q",
						st.Rollout.Status, st.Rollout.Paused, waiting, since.UTC().Format(time.RFC3339), lines[0])
				}

				c.down(a, tokens, 0)
				h.eachBatchOnce(t, a, true)
				dispatched := h.auditOf("dispatch")
				if len(dispatched) == 0 || !strings.HasPrefix(dispatched[0], "deploy@canary#0 dispatched") ||
					!strings.Contains(dispatched[0], "GitHub answers again; it had not since "+since.UTC().Format(time.RFC3339)) {
					t.Errorf("dispatch audit lines %q, want the canary's saying GitHub answers again", dispatched)
				}
				for _, l := range dispatched[1:] {
					if strings.Contains(l, "answers again") {
						t.Errorf("dispatch audit line %q after the outage had ended", l)
					}
				}
				if lines := h.auditOf("unanswered"); len(lines) != 1 {
					t.Errorf("unanswered audit lines %q, want the outage's one only", lines)
				}
				if _, waiting := h.statusJSON(t); waiting != "" {
					t.Errorf("status waiting %q once GitHub answers, want none", waiting)
				}
			})
		})
	}
}

// statusJSON is the rollout's status as GET /api/v1/rollouts/{id} answers
// it, and its waiting.
func (h *harness) statusJSON(t *testing.T) (StatusJSON, string) {
	t.Helper()
	st, err := h.x.Status(context.Background(), h.id)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Waiting string `json:"waiting"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	return st, out.Waiting
}
