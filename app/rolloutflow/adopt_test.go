package rolloutflow

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A crash after GitHub accepted a batch's dispatch but before its run id
// was stored: after the restart the run is found by its run-name and
// adopted, the rollout goes on, and no batch is dispatched twice.
func TestRunOfACutShortDispatchIsAdopted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		runName string // the deploy workflow's run-name; "" for none
		adopted bool
	}{
		{"a deploy workflow named by batch and release", "${{ inputs.batch }} ${{ inputs.release_id }}", true},
		{"a deploy workflow named by batch only", "${{ inputs.batch }}", true},
		{"a deploy workflow without run-name", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
				h.gh.SetClock(h.clock.Now) // runs are created on the rollout's clock
				if tc.runName != "" {
					h.gh.SetRunName(testRepo, "deploy.yml", tc.runName)
				}
				h.start(nil)
				h.tick()
				ds := h.gh.Dispatches(testRepo)
				if len(ds) != 1 {
					t.Fatalf("%d dispatches, want the canary's", len(ds))
				}
				// What the crash leaves: the claim, not the run id.
				if _, err := h.x.deps.DB.Write.ExecContext(context.Background(), `UPDATE rollout_batches
				SET run_id = 0, state = 'dispatching' WHERE rollout_id = $1`, h.id); err != nil {
					t.Fatal(err)
				}
				h.x = h.executor() // the restart
				h.clock.set(h.clock.Now().Add(dispatchGrace))
				h.tick()
				runs, err := loadRuns(context.Background(), h.x.deps.DB.Read, h.id)
				if err != nil {
					t.Fatal(err)
				}
				canary := runs[Ref{Kind: KindDeploy, Stage: 0, Pass: 0, Batch: 0}]
				if got := canary.RunID == ds[0].RunID && canary.State == RunQueued; got != tc.adopted {
					t.Fatalf("canary batch %+v after the restart; adopted %v, want %v (run %d)", canary, got, tc.adopted, ds[0].RunID)
				}
				r := h.run(nil)
				if !tc.adopted {
					if r.Machine.Status != Failed || !strings.Contains(r.Machine.Failure, "no runner for region eu-1") {
						t.Errorf("status %s (%s), want the pass failed at queue_timeout", r.Machine.Status, r.Machine.Failure)
					}
					return
				}
				if r.Machine.Status != Succeeded || !slices.Equal(h.dispatches(), deployAll) {
					t.Errorf("status %s (%s), dispatches %v; want succeeded with each batch once", r.Machine.Status, r.Machine.Failure, h.dispatches())
				}
			})
		})
	}
}

// A GitHub that answers a dispatch without the run's details (no
// return_run_details) leaves the run id unknown: the run is found by its
// run-name as after a restart, not failed at queue_timeout although it ran.
func TestARunDispatchedWithoutItsDetailsIsAdopted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "", time.Minute)
	h.gh.SetClock(h.clock.Now)
	h.gh.SetRunName(testRepo, "deploy.yml", "${{ inputs.batch }} ${{ inputs.release_id }}")
	h.gh.IgnoreRunDetails(testRepo)
	h.start(nil)
	r := h.run(nil)
	if r.Machine.Status != Succeeded || !slices.Equal(h.dispatches(), deployAll) {
		t.Fatalf("status %s (%s), dispatches %v; want succeeded with each batch once", r.Machine.Status, r.Machine.Failure, h.dispatches())
	}
	audit, err := listAudit(context.Background(), h.x.deps.DB.Read, h.id)
	if err != nil {
		t.Fatal(err)
	}
	adopted := 0
	for _, l := range audit {
		if strings.Contains(l.Message, "adopted") {
			adopted++
		}
	}
	if adopted != len(deployAll) {
		t.Errorf("%d runs adopted, want each of the %d batches'", adopted, len(deployAll))
	}
}

// GitHub may answer a dispatch with a 5xx after it accepted it and started
// the run (ghclient does not repeat a dispatch for that reason). The batch
// is then not known to have failed: it stays dispatching, its run is
// adopted by its run-name, and the rollout goes on with each batch
// dispatched once, instead of failing the stage (and, with rollback-wave,
// dispatching a rollback beside a deploy still running). A 4xx is a
// refusal, no run was started: the batch fails at once, as before.
func TestADispatchAnsweredWithA5xxIsAdoptedNotFailed(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := newHarnessOn(t, dbURL, "rollback-wave", "", time.Minute)
		batches := answerFirstDispatchWith(h, http.StatusBadGateway, true)
		h.start(nil)
		r := h.run(nil)
		if got := batches(); r.Machine.Status != Succeeded || !slices.Equal(got, deployAll) {
			t.Errorf("status %s (%s), dispatches %v; want succeeded with each batch once, the canary's run adopted",
				r.Machine.Status, r.Machine.Failure, got)
		}
	})
}

func TestADispatchRefusedWithA4xxFailsTheBatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "", time.Minute)
	batches := answerFirstDispatchWith(h, http.StatusUnprocessableEntity, false)
	h.start(nil)
	h.tick()
	r := h.rollout()
	if r.Machine.Status != Failed || !strings.Contains(r.Machine.Failure, "422") || len(batches()) != 1 {
		t.Errorf("status %s (%s), dispatches %v; want failed at once on the 422", r.Machine.Status, r.Machine.Failure, batches())
	}
}

// answerFirstDispatchWith makes the fake GitHub answer the first dispatch
// with status (starting its run first when started), and the others as
// GitHub does; it returns the dispatches so far as "batch version".
func answerFirstDispatchWith(h *harness, status int, started bool) func() []string {
	var mu sync.Mutex
	var batches []string
	h.gh.Handle("POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches",
		func(w http.ResponseWriter, r *http.Request, p map[string]string) {
			var in struct {
				Inputs map[string]any `json:"inputs"`
			}
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			batch := fmt.Sprint(in.Inputs["batch"])
			mu.Lock()
			first := len(batches) == 0
			batches = append(batches, batch+" "+fmt.Sprint(in.Inputs["version"]))
			mu.Unlock()
			var run githubtest.WorkflowRun
			if !first || started {
				run = h.gh.AddWorkflowRun(testRepo, githubtest.WorkflowRun{Name: "deploy", Path: ".github/workflows/" + p["workflow_id"],
					Event: "workflow_dispatch", HeadBranch: "main", Status: "queued", Inputs: in.Inputs, CreatedAt: h.clock.Now(),
					DisplayTitle: RunName(batch, fmt.Sprint(in.Inputs["release_id"]))})
			}
			w.Header().Set("Content-Type", "application/json")
			if first {
				w.WriteHeader(status)
				_, _ = io.WriteString(w, `{"message":"refused or failed"}`)
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"workflow_run_id": run.ID})
		})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(batches)
	}
}

// On a busy repository the run of a batch whose dispatch was cut short is
// not among the newest hundred runs of the workflow: it is found all the
// same, on a later page, and adopted, instead of its pass failing at
// queue_timeout.
func TestRunOfACutShortDispatchIsAdoptedBeyondThe100NewestRuns(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "", time.Minute)
	h.gh.SetClock(h.clock.Now)
	h.gh.SetRunName(testRepo, "deploy.yml", "${{ inputs.batch }} ${{ inputs.release_id }}")
	h.start(nil)
	h.tick()
	ds := h.gh.Dispatches(testRepo)
	if len(ds) != 1 {
		t.Fatalf("%d dispatches, want the canary's", len(ds))
	}
	if _, err := h.x.deps.DB.Write.ExecContext(context.Background(), `UPDATE rollout_batches
		SET run_id = 0, state = 'dispatching' WHERE rollout_id = $1`, h.id); err != nil {
		t.Fatal(err)
	}
	// Other apps of the repository deploy with the same workflow meanwhile.
	for i := range 250 {
		h.gh.AddWorkflowRun(testRepo, githubtest.WorkflowRun{Name: "deploy", Path: ".github/workflows/deploy.yml",
			Event: "workflow_dispatch", HeadBranch: "main", Status: "queued", CreatedAt: h.clock.Now().Add(time.Second),
			DisplayTitle: fmt.Sprintf("deploy@canary#0 r%d:other/prod", i)})
	}
	h.x = h.executor() // the restart
	h.clock.set(h.clock.Now().Add(dispatchGrace))
	h.tick()
	runs, err := loadRuns(context.Background(), h.x.deps.DB.Read, h.id)
	if err != nil {
		t.Fatal(err)
	}
	if canary := runs[Ref{Kind: KindDeploy, Stage: 0, Pass: 0, Batch: 0}]; canary.RunID != ds[0].RunID || canary.State != RunQueued {
		t.Fatalf("canary batch %+v after the restart, want its run %d adopted", canary, ds[0].RunID)
	}
	if r := h.run(nil); r.Machine.Status != Succeeded || !slices.Equal(h.dispatches(), deployAll) {
		t.Errorf("status %s (%s), dispatches %v; want succeeded with each batch once", r.Machine.Status, r.Machine.Failure, h.dispatches())
	}
}

// GitHub answers 404 on the runs of a repository the App can no longer read
// (removed from the installation). A batch whose dispatch was cut short is
// then not failed at queue_timeout but left as it was, and the audit says
// access is lost, once; once access is back its run is adopted by its name
// and the rollout goes on.
func TestAnAdoptionInARepositoryNoLongerReadableSaysAccessLost(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := newHarnessOn(t, dbURL, "rollback-all", "", time.Minute)
		h.gh.SetClock(h.clock.Now)
		h.gh.SetRunName(testRepo, "deploy.yml", "${{ inputs.batch }} ${{ inputs.release_id }}")
		h.hold = true
		h.start(nil)
		h.tick()
		if _, err := h.x.deps.DB.Write.ExecContext(context.Background(), `UPDATE rollout_batches
			SET run_id = 0, state = 'dispatching' WHERE rollout_id = $1`, h.id); err != nil {
			t.Fatal(err)
		}
		repo := answerRoute(h, "GET /repos/{owner}/{repo}")
		list := answerRoute(h, "GET /repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs")
		repo.set(http.StatusNotFound)
		list.set(http.StatusNotFound)

		// Polls for longer than queue_timeout.
		for range 4 {
			h.clock.set(h.rollout().WakeAt)
			h.tickAs(true)
		}
		runs, err := loadRuns(context.Background(), h.x.deps.DB.Read, h.id)
		if err != nil {
			t.Fatal(err)
		}
		if got := runs[Ref{Kind: KindDeploy}].State; got != RunDispatching {
			t.Errorf("canary batch %s with no access to the repository, want left %s", got, RunDispatching)
		}
		if r := h.rollout(); r.Machine.Phase != PhaseDeploy || r.Machine.Stage != 0 {
			t.Fatalf("rollout %s in phase %s, stage %d (%s); want it waiting for the canary still",
				r.Machine.Status, r.Machine.Phase, r.Machine.Stage, r.Machine.Failure)
		}
		if lost := h.auditOf("access-lost"); len(lost) != 1 || !strings.Contains(lost[0], testRepo) {
			t.Errorf("access-lost audit lines %q, want one naming %s", lost, testRepo)
		}

		// The run ended meanwhile, unheard of. Access is back: it is
		// adopted, and every batch is dispatched once.
		h.endsOnceEach(t, "once access is back", repo, list)
	})
}

// The deploy workflow was removed (or renamed) after a batch's dispatch
// was cut short: GitHub answers 404 on the list of its runs while the
// repository reads. Its run can never be found, so the batch is not left
// to be looked up on every tick for ever (it was not failed even at
// queue_timeout, the rollout hung): it fails, saying which workflow file
// is missing, as a dispatch of a missing workflow does, and on_failure
// applies. (A repository that does not read either is access lost:
// TestAnAdoptionInARepositoryNoLongerReadableSaysAccessLost.)
func TestAnAdoptionWhoseWorkflowIsGoneFailsTheBatch(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
		h.gh.SetClock(h.clock.Now)
		h.hold = true
		h.start(nil)
		h.tick()
		if _, err := h.x.deps.DB.Write.ExecContext(context.Background(), `UPDATE rollout_batches
			SET run_id = 0, state = 'dispatching' WHERE rollout_id = $1`, h.id); err != nil {
			t.Fatal(err)
		}
		list := answerRoute(h, "GET /repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs")
		list.set(http.StatusNotFound)

		h.clock.set(h.clock.Now().Add(dispatchGrace))
		h.tick()
		r := h.rollout()
		want := "workflow deploy.yml not found in " + testRepo
		if r.Machine.Status != Failed || !strings.Contains(r.Machine.Failure, want) {
			t.Errorf("status %s (%s), want failed at once: %s", r.Machine.Status, r.Machine.Failure, want)
		}
		runs, err := loadRuns(context.Background(), h.x.deps.DB.Read, h.id)
		if err != nil {
			t.Fatal(err)
		}
		if canary := runs[Ref{Kind: KindDeploy}]; canary.State != RunFailure || !strings.Contains(canary.Detail, want) {
			t.Errorf("canary batch %+v, want failed: %s", canary, want)
		}
		if lost := h.auditOf("access-lost"); len(lost) != 0 {
			t.Errorf("access-lost audit lines %q for a repository that reads", lost)
		}
		if n := len(h.gh.Dispatches(testRepo)); n != 1 {
			t.Errorf("%d dispatches, want the canary's only", n)
		}
	})
}
