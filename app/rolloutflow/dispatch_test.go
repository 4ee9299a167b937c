package rolloutflow

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// access is a fake GitHub whose answers on the repository and on the
// deploy workflow's dispatches the test sets: a status for each (0: as
// GitHub answers when both exist and the App reads them; below 0 on the
// repository: the connection is dropped without an answer).
type access struct {
	h        *harness
	mu       sync.Mutex
	repo     int
	dispatch int
	header   http.Header // sent with a dispatch's status
	message  string      // GitHub's message with a dispatch's status ("": the status's text)
	batches  []string    // the dispatches that started a run, as "batch version"
}

func answerAccess(h *harness) *access {
	a := &access{h: h}
	h.gh.Handle("GET /repos/{owner}/{repo}", func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		a.mu.Lock()
		status := a.repo
		a.mu.Unlock()
		if status < 0 {
			panic(http.ErrAbortHandler)
		}
		w.Header().Set("Content-Type", "application/json")
		if status != 0 {
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"message":%q}`, http.StatusText(status))
			return
		}
		fmt.Fprintf(w, `{"id":1,"name":%q,"full_name":"%s/%s","default_branch":"main"}`, p["repo"], p["owner"], p["repo"])
	})
	h.gh.Handle("POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches",
		func(w http.ResponseWriter, r *http.Request, p map[string]string) {
			var in struct {
				Inputs map[string]any `json:"inputs"`
			}
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			a.mu.Lock()
			status := a.dispatch
			if status == 0 {
				a.batches = append(a.batches, fmt.Sprint(in.Inputs["batch"], " ", in.Inputs["version"]))
			}
			header, message := a.header, cmp.Or(a.message, http.StatusText(status))
			a.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			if status != 0 {
				for k, v := range header {
					w.Header()[k] = v
				}
				w.WriteHeader(status)
				fmt.Fprintf(w, `{"message":%q}`, message)
				return
			}
			run := h.gh.AddWorkflowRun(testRepo, githubtest.WorkflowRun{Name: "deploy", Path: ".github/workflows/" + p["workflow_id"],
				Event: "workflow_dispatch", HeadBranch: "main", Status: "queued", Inputs: in.Inputs, CreatedAt: h.clock.Now()})
			_ = json.NewEncoder(w).Encode(map[string]any{"workflow_run_id": run.ID})
		})
	return a
}

func (a *access) set(repo, dispatch int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.repo, a.dispatch = repo, dispatch
}

func (a *access) started() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.batches)
}

func (h *harness) auditOf(typ string) []string {
	h.t.Helper()
	audit, err := listAudit(context.Background(), h.x.deps.DB.Read, h.id)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, a := range audit {
		if a.Type == typ {
			out = append(out, a.Message)
		}
	}
	return out
}

// GitHub answers 404 on a workflow dispatch also when the App lost access
// to the repository (it was removed from the installation). No run was
// started, and nothing is known against the batch: it is not failed (no
// on_failure), the rollout waits where it is and its audit says why, once;
// once access is back the batch is dispatched and the rollout goes on.
func TestADispatch404OfARepositoryNoLongerReadableFailsNoBatch(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := newHarnessOn(t, dbURL, "rollback-all", "", time.Minute)
		a := answerAccess(h)
		a.set(http.StatusNotFound, http.StatusNotFound)
		h.start(nil)

		// Tries for longer than queue_timeout.
		h.tick()
		for range 4 {
			h.clock.set(h.rollout().WakeAt)
			h.tickAs(true)
		}
		r := h.rollout()
		if r.Machine.Phase != PhaseDeploy || r.Machine.Stage != 0 {
			t.Fatalf("rollout %s in phase %s, stage %d (%s), want it deploying the canary still",
				r.Machine.Status, r.Machine.Phase, r.Machine.Stage, r.Machine.Failure)
		}
		h.noBatch(t, "while GitHub answers 404 on the repository")
		if !r.WakeAt.After(h.clock.Now()) || r.WakeAt.After(h.clock.Now().Add(runPoll)) {
			t.Errorf("next tick at %s, want one within %s of %s", r.WakeAt, runPoll, h.clock.Now())
		}
		lost := h.auditOf("access-lost")
		if len(lost) != 1 || !strings.Contains(lost[0], testRepo) || !strings.Contains(lost[0], "deploy@canary#0") {
			t.Errorf("access-lost audit lines %q, want one naming %s and the canary's batch", lost, testRepo)
		}

		// Access is back: the batch is dispatched, once, and so is every other.
		a.set(0, 0)
		h.eachBatchOnce(t, a, false)
	})
}

// A dispatch GitHub answers 404 for while the repository reads is a
// workflow GitHub does not know: the batch fails at once, saying so.
func TestADispatch404OfAMissingWorkflowFailsTheBatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "", time.Minute)
	a := answerAccess(h)
	a.set(0, http.StatusNotFound)
	h.start(nil)
	h.tick()
	r := h.rollout()
	if r.Machine.Status != Failed || !strings.Contains(r.Machine.Failure, "workflow deploy.yml not found in "+testRepo) {
		t.Errorf("status %s (%s), want failed at once: the workflow is not found", r.Machine.Status, r.Machine.Failure)
	}
	if lost := h.auditOf("access-lost"); len(lost) != 0 {
		t.Errorf("access-lost audit lines %q for a repository that reads", lost)
	}
}

// A dispatch 404 whose repository GitHub gives no answer about (5xx) says
// nothing either way: the batch is neither failed nor dispatched, and is
// tried again on the next poll.
func TestADispatch404WithTheRepositoryUnansweredFailsNoBatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "rollback-all", "", time.Minute)
	a := answerAccess(h)
	a.set(http.StatusServiceUnavailable, http.StatusNotFound)
	h.start(nil)
	h.tick()
	r := h.rollout()
	if r.Machine.Phase != PhaseDeploy || r.WakeAt.IsZero() {
		t.Fatalf("rollout %s in phase %s (%s), next tick %s; want it deploying the canary, asked again later",
			r.Machine.Status, r.Machine.Phase, r.Machine.Failure, r.WakeAt)
	}
	h.noBatch(t, "")
	if lost := h.auditOf("access-lost"); len(lost) != 0 {
		t.Errorf("access-lost audit lines %q while the repository's answer is unknown", lost)
	}
	a.set(0, 0)
	// The client's retries of the 5xx slept on the fake clock: back to a
	// whole second, as the harness's wake-ups (µs) need.
	h.eachBatchOnce(t, a, true)
}

// A rollout with no ref of its own dispatches on the repository's default
// branch, which it reads first. A 5xx or no answer there is a short GitHub
// outage, not a refusal: no run was started and nothing is known against
// the batch, so it is neither failed nor claimed, and the next poll
// dispatches it.
func TestADefaultBranchUnansweredFailsNoBatch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		status int
	}{{"a 5xx", http.StatusServiceUnavailable}, {"no answer", -1}} {
		t.Run(c.name, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				h := newHarnessOn(t, dbURL, "rollback-all", "", time.Minute)
				a := answerAccess(h)
				a.set(c.status, 0)
				h.start(func(s *Snapshot) { s.Settings.Ref = "" })
				h.tick()
				r := h.rollout()
				if r.Machine.Phase != PhaseDeploy || r.Machine.Status == Failed || r.WakeAt.IsZero() {
					t.Fatalf("rollout %s in phase %s (%s), next tick %s; want it deploying the canary, asked again later",
						r.Machine.Status, r.Machine.Phase, r.Machine.Failure, r.WakeAt)
				}
				h.noBatch(t, "while the default branch is unanswered")
				if n := h.gh.Count("POST", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches"); n != 0 {
					t.Fatalf("%d dispatches without a ref to dispatch on, want none", n)
				}
				if lost := h.auditOf("access-lost"); len(lost) != 0 {
					t.Errorf("access-lost audit lines %q while the repository's answer is unknown", lost)
				}

				// GitHub answers again: the batch is dispatched, once, on
				// the default branch, and so is every other.
				a.set(0, 0)
				h.eachBatchOnce(t, a, true)
			})
		})
	}
}

// answerTokens makes GitHub refuse the App a token for its installation
// with status (deleted: 404, suspended: 403) while status is not 0; 0
// gives tokens again, below 0 drops the connection without an answer.
func answerTokens(h *harness) *routeAnswers {
	return answerRoute(h, "POST /app/installations/{installation_id}/access_tokens")
}

// routeAnswers answers a route of the fake GitHub with status (and header)
// while status is not 0, as GitHub does when it is 0; below 0 it drops the
// connection without an answer.
type routeAnswers struct {
	mu     sync.Mutex
	status int
	header http.Header // sent with status
}

func answerRoute(h *harness, route string) *routeAnswers {
	rt, give := &routeAnswers{}, h.gh.Default(route)
	h.gh.Handle(route, func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		rt.mu.Lock()
		status, header := rt.status, rt.header
		rt.mu.Unlock()
		if status == 0 {
			give(w, r, p)
			return
		}
		if status < 0 {
			panic(http.ErrAbortHandler)
		}
		for k, v := range header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"message":%q}`, http.StatusText(status))
	})
	return rt
}

func (rt *routeAnswers) set(status int) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.status = status
}

// An installation that was deleted (GitHub answers 404 on its token) or
// suspended (403) is access lost, as for a repository removed from it: no
// run was started and nothing is known against the batch, so it is not
// failed (neither at once nor at queue_timeout), the audit says why, once,
// and the batch is dispatched once access is back.
func TestAnInstallationRefusedItsTokenFailsNoBatch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		status int
		ref    string
	}{
		{"deleted", http.StatusNotFound, "main"},
		{"suspended", http.StatusForbidden, "main"},
		{"deleted, on the default branch", http.StatusNotFound, ""},
		{"suspended, on the default branch", http.StatusForbidden, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				h := newHarnessOn(t, dbURL, "rollback-all", "", time.Minute)
				a := answerAccess(h)
				tokens := answerTokens(h)
				h.start(func(s *Snapshot) { s.Settings.Ref = c.ref })
				tokens.set(c.status)
				// A server started after the installation went: no token
				// of the installation is cached.
				h.x = h.executor()

				// Tries for longer than queue_timeout.
				h.tick()
				for range 4 {
					h.clock.set(h.rollout().WakeAt)
					h.tickAs(true)
				}
				r := h.rollout()
				if r.Machine.Phase != PhaseDeploy || r.Machine.Stage != 0 || r.WakeAt.IsZero() {
					t.Fatalf("rollout %s in phase %s, stage %d (%s), next tick %s; want it deploying the canary still",
						r.Machine.Status, r.Machine.Phase, r.Machine.Stage, r.Machine.Failure, r.WakeAt)
				}
				h.noBatch(t, "while GitHub refuses the installation a token")
				lost := h.auditOf("access-lost")
				if len(lost) != 1 || !strings.Contains(lost[0], fmt.Sprintf("installation %d", githubtest.InstallationID)) ||
					!strings.Contains(lost[0], "deploy@canary#0") {
					t.Errorf("access-lost audit lines %q, want one naming installation %d and the canary's batch",
						lost, githubtest.InstallationID)
				}

				tokens.set(0)
				h.eachBatchOnce(t, a, false)
			})
		})
	}
}

// A token GitHub does not answer for (5xx, no answer) is an outage: the
// dispatch was not sent, so the batch is neither failed nor left
// dispatching (to fail at queue_timeout), and is dispatched on the next
// poll. Nothing is known about the installation: no access-lost line.
func TestATokenUnansweredFailsNoBatch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		status int
	}{{"a 5xx", http.StatusServiceUnavailable}, {"no answer", -1}} {
		t.Run(c.name, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				h := newHarnessOn(t, dbURL, "rollback-all", "", time.Minute)
				a := answerAccess(h)
				tokens := answerTokens(h)
				h.start(nil)
				tokens.set(c.status)
				h.x = h.executor() // no token of the installation cached
				h.tick()
				r := h.rollout()
				if r.Machine.Phase != PhaseDeploy || r.Machine.Status == Failed || r.WakeAt.IsZero() {
					t.Fatalf("rollout %s in phase %s (%s), next tick %s; want it deploying the canary, asked again later",
						r.Machine.Status, r.Machine.Phase, r.Machine.Failure, r.WakeAt)
				}
				h.noBatch(t, "while GitHub gives no token")
				if lost := h.auditOf("access-lost"); len(lost) != 0 {
					t.Errorf("access-lost audit lines %q while the installation's answer is unknown", lost)
				}
				tokens.set(0)
				h.eachBatchOnce(t, a, true)
			})
		})
	}
}

// noBatch fails the test when the rollout holds a dispatched batch, while
// (if given) says what GitHub is doing meanwhile.
func (h *harness) noBatch(t *testing.T, while string) {
	t.Helper()
	if ds, err := listDispatched(context.Background(), h.x.deps.DB.Read, h.id); err != nil || len(ds) != 0 {
		t.Fatalf("batches %+v (%v) %s, want none", ds, err, while)
	}
}

// eachBatchOnce runs the rollout on from its next tick, once GitHub answers
// again, and wants it to succeed with every batch dispatched once. After
// client retries slept on the fake clock (wholeSecond), the clock goes back
// to a whole second first, as the harness's wake-ups (µs) need.
func (h *harness) eachBatchOnce(t *testing.T, a *access, wholeSecond bool) {
	t.Helper()
	if wholeSecond {
		h.clock.set(h.clock.Now().Truncate(time.Second).Add(time.Second))
	}
	h.clock.set(h.rollout().WakeAt)
	if r := h.run(nil); r.Machine.Status != Succeeded || !slices.Equal(a.started(), deployAll) {
		t.Errorf("status %s (%s), dispatches %v once GitHub answers again; want succeeded with each batch once",
			r.Machine.Status, r.Machine.Failure, a.started())
	}
}
