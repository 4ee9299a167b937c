package rolloutflow

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// runAnswers is a GET .../actions/runs/{run_id} on the fake GitHub whose
// answer per run the test sets: a status to fail with, or, with none, the
// run completed with conclusion (default success); a status below 0
// drops the connection without an answer.
type runAnswers struct {
	mu         sync.Mutex
	status     map[int64]int
	conclusion map[int64]string
}

func answerRuns(h *harness) *runAnswers {
	a := &runAnswers{status: map[int64]int{}, conclusion: map[int64]string{}}
	h.gh.Handle("GET /repos/{owner}/{repo}/actions/runs/{run_id}", func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		id, _ := strconv.ParseInt(p["run_id"], 10, 64)
		a.mu.Lock()
		status, conclusion := a.status[id], a.conclusion[id]
		a.mu.Unlock()
		if status < 0 { // no answer: the connection is dropped
			panic(http.ErrAbortHandler)
		}
		w.Header().Set("Content-Type", "application/json")
		if status != 0 {
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"message":"%s"}`, http.StatusText(status))
			return
		}
		if conclusion == "" {
			conclusion = "success"
		}
		fmt.Fprintf(w, `{"id":%d,"status":"completed","conclusion":%q}`, id, conclusion)
	})
	return a
}

func (a *runAnswers) fail(run int64, status int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if status == 0 {
		delete(a.status, run)
	} else {
		a.status[run] = status
	}
}

// inResto runs the rollout until both batches of its last stage (two
// regions in parallel) are dispatched, and holds their runs there: it
// returns their run ids (eu-2a, us-1a).
func inResto(t *testing.T, h *harness) (int64, int64) {
	t.Helper()
	h.start(nil)
	h.run(func(Rollout) bool { return len(h.gh.Dispatches(testRepo)) == 5 })
	h.hold = true
	ds := h.gh.Dispatches(testRepo)
	if ds[3].Inputs["region"] != "eu-2" || ds[4].Inputs["region"] != "us-1" {
		t.Fatalf("dispatches 4 and 5 are %v and %v, want eu-2 and us-1", ds[3].Inputs, ds[4].Inputs)
	}
	return ds[3].RunID, ds[4].RunID
}

func (h *harness) batchState(runID int64) string {
	h.t.Helper()
	ds, err := listDispatched(context.Background(), h.x.deps.DB.Read, h.id)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, d := range ds {
		if d.RunID == runID {
			return d.State
		}
	}
	h.t.Fatalf("no batch has run %d", runID)
	return ""
}

// A 5xx on one run's poll leaves that batch as it was, for the next poll,
// but does not keep the rollout's other runs from being read and acted on.
func TestOneRunsOutageDoesNotStopThePollOfTheOthers(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusBadGateway, http.StatusServiceUnavailable, -1} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			h := newHarness(t, "stop", "", time.Minute)
			eu2, us1 := inResto(t, h)
			answers := answerRuns(h)
			answers.fail(eu2, status) // both completed, but GitHub cannot say so for eu-2a

			// Several polls: every one must read us-1a whatever the order
			// the runs are asked in.
			for range 3 {
				h.clock.set(h.rollout().WakeAt)
				if err := h.x.Tick(context.Background(), h.id, true); err != nil {
					t.Fatalf("scheduled tick with one run's poll failing: %v", err)
				}
			}
			if got := h.batchState(us1); got != RunSuccess {
				t.Errorf("us-1a's completed run is %s after the polls, want %s", got, RunSuccess)
			}
			if got := h.batchState(eu2); got != RunQueued {
				t.Errorf("eu-2a, whose poll failed, is %s, want left %s", got, RunQueued)
			}
			r := h.rollout()
			if r.Machine.Phase == PhaseDone {
				t.Fatalf("rollout %s (%s) while eu-2a's run is unknown", r.Machine.Status, r.Machine.Failure)
			}
			if !r.WakeAt.After(h.clock.Now()) || r.WakeAt.After(h.clock.Now().Add(runPoll)) {
				t.Errorf("next tick at %s, want the next poll within %s of %s", r.WakeAt, runPoll, h.clock.Now())
			}

			answers.fail(eu2, 0) // GitHub is back: the next poll reads eu-2a
			// The client's retries of the 5xx slept on the fake clock: back
			// to a whole second, as the harness's wake-ups (µs) need.
			h.clock.set(h.clock.Now().Truncate(time.Second).Add(time.Second))
			r = h.run(nil)
			if r.Machine.Status != Succeeded {
				t.Fatalf("status %s (%s), want succeeded once eu-2a's run is read", r.Machine.Status, r.Machine.Failure)
			}
		})
	}
}

// GitHub answers 404 on a run also when the App lost access to its
// repository (the installation was removed from it). That says nothing of
// the run: the batch is not failed (no rollback waves are dispatched), the
// rollout stays where it is, and its audit says why, once.
func TestA404OnARunOfARepositoryNoLongerReadableFailsNoBatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "rollback-all", "", time.Minute)
	h.hold = true
	h.start(nil)
	h.tick()
	run := h.gh.Dispatches(testRepo)[0].RunID
	answers := answerRuns(h)
	answers.fail(run, http.StatusNotFound)
	var repoStatus sync.Map
	repoStatus.Store("status", http.StatusNotFound)
	h.gh.Handle("GET /repos/{owner}/{repo}", func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		v, _ := repoStatus.Load("status")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(v.(int))
		fmt.Fprintf(w, `{"id":1,"name":%q,"full_name":"%s/%s"}`, p["repo"], p["owner"], p["repo"])
	})

	// Polls for longer than queue_timeout: the run is never known to wait.
	for range 4 {
		h.clock.set(h.rollout().WakeAt)
		h.tickAs(true)
	}
	if got := h.batchState(run); got != RunQueued {
		t.Fatalf("canary batch %s with no access to the repository, want left %s", got, RunQueued)
	}
	r := h.rollout()
	if r.Machine.Phase == PhaseDone || r.Machine.Stage != 0 {
		t.Fatalf("rollout %s in stage %d (%s), want it left where it was", r.Machine.Status, r.Machine.Stage, r.Machine.Failure)
	}
	if n := len(h.gh.Dispatches(testRepo)); n != 1 {
		t.Errorf("%d dispatches, want only the canary's", n)
	}
	audit, err := listAudit(context.Background(), h.x.deps.DB.Read, h.id)
	if err != nil {
		t.Fatal(err)
	}
	var lost []string
	for _, a := range audit {
		if a.Type == "access-lost" {
			lost = append(lost, a.Message)
		}
	}
	if len(lost) != 1 || !strings.Contains(lost[0], testRepo) || !strings.Contains(lost[0], strconv.FormatInt(run, 10)) {
		t.Errorf("access-lost audit lines %q, want one naming %s and run %d", lost, testRepo, run)
	}

	// Access is back and the run is still 404: it was deleted after all.
	repoStatus.Store("status", http.StatusOK)
	h.clock.set(h.clock.Now().Truncate(time.Second).Add(time.Second))
	h.clock.set(h.rollout().WakeAt)
	h.tickAs(true)
	if got := h.batchState(run); got != RunFailure {
		t.Errorf("canary batch %s once the repository reads and its run is 404, want %s", got, RunFailure)
	}
}

// A batch left dispatching whose run cannot be looked up (GitHub answers
// the list of runs with a 5xx) holds neither the tick nor the other runs,
// and is not failed past its queue_timeout on what was known before.
func TestAnAdoptionInAnOutageDoesNotStopTheOtherRuns(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "", time.Minute)
	eu2, us1 := inResto(t, h)
	ctx := context.Background()
	ref := Ref{Kind: KindDeploy, Stage: 3, Pass: 0, Batch: 0}
	// eu-2a's dispatch was cut short: its run id was never stored.
	if err := h.x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		return setBatch(ctx, tx, h.id, ref, 0, RunDispatching, "", h.clock.Now())
	}); err != nil {
		t.Fatal(err)
	}
	h.gh.CompleteRun(testRepo, us1, "success") // ripcord never hears
	h.gh.Handle("GET /repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs", func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprint(w, `{"message":"Server Error"}`)
	})
	for range 3 {
		h.clock.set(h.rollout().WakeAt)
		if err := h.x.Tick(ctx, h.id, true); err != nil {
			t.Fatalf("scheduled tick with the adoption of eu-2a failing: %v", err)
		}
	}
	if got := h.batchState(us1); got != RunSuccess {
		t.Errorf("us-1a's completed run is %s, want %s", got, RunSuccess)
	}
	runs, err := loadRuns(ctx, h.x.deps.DB.Read, h.id)
	if err != nil {
		t.Fatal(err)
	}
	if got := runs[ref]; got.State != RunDispatching {
		t.Errorf("eu-2a (run %d) is %s, want left %s", eu2, got.State, RunDispatching)
	}
	if r := h.rollout(); r.Machine.Phase == PhaseDone {
		t.Errorf("rollout %s (%s) while eu-2a's run could not be looked up", r.Machine.Status, r.Machine.Failure)
	}
}

// An installation that was deleted (GitHub answers 404 on its token) or
// suspended (403) while a batch's run is in flight, or while a batch whose
// dispatch was cut short waits to be adopted: no run can be asked about.
// That says nothing against the batch: it is left as it was (no on_failure,
// not failed at queue_timeout), the audit says access is lost, once, naming
// the installation, and once GitHub gives tokens again the run is read (or
// adopted) and the rollout goes on. A token GitHub does not answer for is an
// outage: the same, with no access-lost line.
func TestAnInstallationRefusedItsTokenFailsNoRunInFlight(t *testing.T) {
	t.Parallel()
	for _, c := range tokenFailures {
		for _, cutShort := range []bool{false, true} {
			name := c.name + ", run polled"
			if cutShort {
				name = c.name + ", run to adopt"
			}
			t.Run(name, func(t *testing.T) {
				testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
					h := newHarnessOn(t, dbURL, "rollback-all", "", time.Minute)
					h.gh.SetClock(h.clock.Now) // runs are created on the rollout's clock
					h.gh.SetRunName(testRepo, "deploy.yml", "${{ inputs.batch }} ${{ inputs.release_id }}")
					tokens := answerTokens(h)
					h.hold = true
					h.start(nil)
					h.tick()
					ref := Ref{Kind: KindDeploy, Stage: 0, Pass: 0, Batch: 0}
					want := RunQueued
					if cutShort {
						// The dispatch was accepted, its run id never stored.
						if _, err := h.x.deps.DB.Write.ExecContext(context.Background(), `UPDATE rollout_batches
							SET run_id = 0, state = 'dispatching' WHERE rollout_id = $1`, h.id); err != nil {
							t.Fatal(err)
						}
						want = RunDispatching
					}
					tokens.set(c.status)
					h.x = h.executor() // no token of the installation cached

					// Polls for longer than queue_timeout.
					for range 4 {
						h.clock.set(h.rollout().WakeAt)
						h.tickAs(true)
					}
					runs, err := loadRuns(context.Background(), h.x.deps.DB.Read, h.id)
					if err != nil {
						t.Fatal(err)
					}
					if got := runs[ref].State; got != want {
						t.Errorf("canary batch %s without a token, want left %s", got, want)
					}
					r := h.rollout()
					if r.Machine.Phase != PhaseDeploy || r.Machine.Stage != 0 || r.WakeAt.IsZero() {
						t.Fatalf("rollout %s in phase %s, stage %d (%s), next tick %s; want it waiting for the canary still",
							r.Machine.Status, r.Machine.Phase, r.Machine.Stage, r.Machine.Failure, r.WakeAt)
					}
					lost := h.auditOf("access-lost")
					switch {
					case c.lost && (len(lost) != 1 || !strings.Contains(lost[0], fmt.Sprintf("installation %d", githubtest.InstallationID)) ||
						!strings.Contains(lost[0], testRepo)):
						t.Errorf("access-lost audit lines %q, want one naming installation %d and %s",
							lost, githubtest.InstallationID, testRepo)
					case !c.lost && len(lost) != 0:
						t.Errorf("access-lost audit lines %q while the installation's answer is unknown", lost)
					}

					// The run ended meanwhile, unheard of. Tokens again: it is
					// read (or adopted), and every batch is dispatched once.
					h.gh.CompleteRun(testRepo, h.gh.Dispatches(testRepo)[0].RunID, "success")
					tokens.set(0)
					h.hold = false
					h.clock.set(h.clock.Now().Truncate(time.Second).Add(time.Second))
					h.clock.set(h.rollout().WakeAt)
					if r := h.run(nil); r.Machine.Status != Succeeded || !slices.Equal(h.dispatches(), deployAll) {
						t.Errorf("status %s (%s), dispatches %v once GitHub gives tokens again; want succeeded with each batch once",
							r.Machine.Status, r.Machine.Failure, h.dispatches())
					}
				})
			})
		}
	}
}
