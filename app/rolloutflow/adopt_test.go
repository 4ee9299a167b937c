package rolloutflow

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// A crash after GitHub accepted a batch's dispatch but before its run id
// was stored: after the restart the run is found by its run-name and
// adopted, the rollout goes on, and no batch is dispatched twice.
func TestRunOfACutShortDispatchIsAdopted(t *testing.T) {
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
			testdb.Each(t, func(t *testing.T, dbURL string) {
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
