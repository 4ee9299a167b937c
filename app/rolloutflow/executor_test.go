package rolloutflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/rollout"
)

var deployAll = []string{
	"deploy@canary#0 v2",
	"deploy@eu-1/eu-1/eu-1a#0 v2",
	"deploy@eu-1/eu-1/eu-1b#0 v2",
	"deploy@resto/eu-2/eu-2a#0 v2",
	"deploy@resto/us-1/us-1a#0 v2",
}

func TestGreenRolloutDispatchesEveryBatchOnceAndSucceeds(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) { greenRollout(t, newHarnessOn(t, dbURL, "stop", "", time.Minute)) })
}

func greenRollout(t *testing.T, h *harness) {
	h.start(nil)
	r := h.run(nil)
	if r.Machine.Status != Succeeded {
		t.Fatalf("status %s (%s), want succeeded", r.Machine.Status, r.Machine.Failure)
	}
	if got := h.dispatches(); !slices.Equal(got, deployAll) {
		t.Errorf("dispatches:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(deployAll, "\n"))
	}
	d := h.gh.Dispatches(testRepo)[4]
	if d.Workflow != "deploy.yml" || d.Ref != "main" || d.Inputs["region"] != "us-1" || d.Inputs["targets"] != `["us1-a-01"]` ||
		d.Inputs["stage"] != "resto/eu-2a+us-1a" || d.Inputs["release_id"] != "r2:prod-eu/prod" || d.Inputs["parallel"] != "1" {
		t.Errorf("last dispatch %+v", d)
	}
	st, err := h.x.Status(context.Background(), h.id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "SUCCESS" || st.RolloutProgress != "4/4" {
		t.Errorf("state %s progress %s", st.State, st.RolloutProgress)
	}
	if got := h.passes("succeeded"); got != 5 {
		t.Errorf("ripcord_rollout_passes_total{outcome=succeeded} = %v, want 5", got)
	}
	// Each stage bakes a minute with a reading every 30s: two readings per
	// pass of every stage.
	if n := h.prom.count("us-1a"); n != 2 {
		t.Errorf("%d readings of us-1a, want 2", n)
	}
}

// A red error rate in eu-1b (the third stage) fails it after two red
// readings; on_failure decides which batches are dispatched again.
func TestRedMetricInTheThirdStage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		onFailure string
		again     []string // dispatched after the three deploys, in order
		stages    []string
		drift     []string // stages left on the new version
	}{
		{"stop", nil, []string{StageSucceeded, StageSucceeded, StageFailed, StagePending},
			[]string{"canary", "eu-1/eu-1a", "eu-1/eu-1b (partly)"}},
		{"rollback-wave", []string{"rollback@eu-1/eu-1/eu-1b#0 v1"},
			[]string{StageSucceeded, StageSucceeded, StageRolledBack, StagePending}, []string{"canary", "eu-1/eu-1a"}},
		{"rollback-all", []string{"rollback@eu-1/eu-1/eu-1b#0 v1", "rollback@eu-1/eu-1/eu-1a#0 v1", "rollback@canary#0 v1"},
			[]string{StageRolledBack, StageRolledBack, StageRolledBack, StagePending}, nil},
	} {
		t.Run(tc.onFailure, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				h := newHarnessOn(t, dbURL, tc.onFailure, "", 5*time.Minute)
				redMetric(t, h, tc.again, tc.stages)
				st, err := h.executor().Status(context.Background(), h.rollout().ID)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(st.Rollout.Drift, tc.drift) {
					t.Errorf("drift %q, want %q", st.Rollout.Drift, tc.drift)
				}
			})
		})
	}
}

func redMetric(t *testing.T, h *harness, again, stages []string) {
	h.prom.set("eu-1b", 0.2)
	h.start(nil)
	r := h.run(nil)
	if r.Machine.Status != Failed {
		t.Fatalf("status %s, want failed", r.Machine.Status)
	}
	want := append(slices.Clone(deployAll[:3]), again...)
	if got := h.dispatches(); !slices.Equal(got, want) {
		t.Errorf("dispatches:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var states []string
	for _, s := range r.Machine.Stages {
		states = append(states, s.State)
	}
	if !slices.Equal(states, stages) {
		t.Errorf("stage states %v, want %v", states, stages)
	}
	if g := r.Machine.Stages[2].Gate; !strings.Contains(g, "metric error-rate (eu-1/eu-1b): value 0.2 above max 0.01") {
		t.Errorf("gate %q does not say which metric was red where", g)
	}
	// failures_to_stop 2: the stage fails at the second red reading, not at
	// the end of its 5m bake.
	if n := h.prom.count("eu-1b"); n != 2 {
		t.Errorf("%d readings of eu-1b, want 2", n)
	}
	if again != nil && (r.Machine.Rollback == nil || r.Machine.Rollback.Outcome != "succeeded") {
		t.Errorf("rollback %+v, want succeeded", r.Machine.Rollback)
	}
}

func TestNoDataIsRed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "", time.Minute)
	h.prom.noData["eu-1a"] = true
	h.start(nil)
	r := h.run(nil)
	if r.Machine.Status != Failed || !strings.Contains(r.Machine.Stages[0].Gate, "no data") {
		t.Fatalf("status %s gate %q: a metric without data must fail the canary", r.Machine.Status, r.Machine.Stages[0].Gate)
	}
}

func TestABatchWhoseRunFailsFailsItsPassAndIsNotRetried(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "rollback-wave", "", time.Minute)
	h.failAt["deploy@eu-1/eu-1/eu-1a#0"] = true
	h.start(nil)
	r := h.run(nil)
	want := []string{"deploy@canary#0 v2", "deploy@eu-1/eu-1/eu-1a#0 v2", "rollback@eu-1/eu-1/eu-1a#0 v1"}
	if got := h.dispatches(); !slices.Equal(got, want) {
		t.Errorf("dispatches %v, want %v", got, want)
	}
	if r.Machine.Status != Failed || !strings.Contains(r.Machine.Failure, "workflow run") {
		t.Errorf("status %s failure %q", r.Machine.Status, r.Machine.Failure)
	}
}

func TestABatchQueuedPastQueueTimeoutFailsWithNoRunner(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "", time.Minute)
	h.hold = true // the canary's run never leaves the queue
	h.start(nil)
	r := h.run(nil)
	if r.Machine.Status != Failed || !strings.Contains(r.Machine.Failure, "no runner for region eu-1") {
		t.Fatalf("status %s failure %q, want no runner for region eu-1", r.Machine.Status, r.Machine.Failure)
	}
	if got := h.clock.Now().Sub(t0.Add(time.Second)); got != rollout.DefaultQueueTimeout {
		t.Errorf("failed after %s, want queue_timeout %s", got, rollout.DefaultQueueTimeout)
	}
}

// A workflow_run event that never comes does not hold the rollout: a
// scheduled tick asks GitHub about the run.
func TestALostRunEventIsMadeUpByPolling(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "", time.Minute)
	h.hold = true
	h.start(nil)
	h.tick()
	run := h.gh.Dispatches(testRepo)[0].RunID
	h.gh.CompleteRun(testRepo, run, "success") // GitHub knows; ripcord never hears
	r := h.run(func(r Rollout) bool { return r.Machine.Stage == 1 })
	if r.Machine.Stage != 1 || r.Machine.Stages[0].State != StageSucceeded {
		t.Fatalf("stage %d, canary %s: the finished run was not found by polling", r.Machine.Stage, r.Machine.Stages[0].State)
	}
	if got := h.clock.Now().Sub(t0.Add(time.Second)); got > runPoll+time.Minute {
		t.Errorf("the canary passed %s after its dispatch, want within a poll (%s) and its bake", got, runPoll)
	}
}

func TestRestartInTheMiddleOfABakeResumesIt(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		restartMidBake(t, newHarnessOn(t, dbURL, "stop", "", 10*time.Minute))
	})
}

func restartMidBake(t *testing.T, h *harness) {
	h.start(nil)
	// Run until the canary has baked for 5 of its 10 minutes.
	r := h.run(func(r Rollout) bool { return r.Machine.Phase == PhaseBake && r.Machine.Bake.Reads == 10 })
	bakeFrom := r.Machine.Bake.From
	before := len(h.dispatches())
	h.x = h.executor() // a new process on the same database
	r = h.run(func(r Rollout) bool { return r.Machine.Stage == 1 })
	if got := len(h.dispatches()); got != before+1 {
		t.Errorf("%d dispatches after the restart, want %d: no batch twice", got, before+1)
	}
	if got := h.clock.Now().Sub(bakeFrom); got != 10*time.Minute {
		t.Errorf("the canary's bake lasted %s across the restart, want 10m", got)
	}
	if n := h.prom.count("eu-1a"); n != 20 {
		t.Errorf("%d readings of the canary, want 20 (one every 30s for 10m, none repeated)", n)
	}
	r = h.run(nil)
	if r.Machine.Status != Succeeded {
		t.Errorf("status %s", r.Machine.Status)
	}
	seen := map[string]bool{}
	for _, d := range h.dispatches() {
		if seen[d] {
			t.Errorf("%s dispatched twice", d)
		}
		seen[d] = true
	}
}

func TestPrepareRunsOnceBeforeTheFirstBatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "", time.Minute)
	h.start(func(s *Snapshot) { s.Settings.Prepare = "prepare.yml" })
	r := h.run(nil)
	ds := h.gh.Dispatches(testRepo)
	if r.Machine.Status != Succeeded || len(ds) != 6 {
		t.Fatalf("status %s with %d dispatches, want succeeded with prepare and 5 batches", r.Machine.Status, len(ds))
	}
	if ds[0].Workflow != "prepare.yml" || ds[0].Inputs["version"] != "v2" || ds[0].Inputs["batch"] != nil {
		t.Errorf("first dispatch %+v, want prepare.yml with the version and no batch", ds[0])
	}
	for _, d := range ds[1:] {
		if d.Workflow != "deploy.yml" {
			t.Errorf("a batch ran %s", d.Workflow)
		}
	}
}

func TestAFailedPrepareDeploysNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "rollback-all", "", time.Minute)
	h.failAt["prepare"] = true
	h.start(func(s *Snapshot) { s.Settings.Prepare = "prepare.yml" })
	r := h.run(nil)
	if r.Machine.Status != Failed || len(h.gh.Dispatches(testRepo)) != 1 || r.Machine.Rollback != nil {
		t.Fatalf("status %s, %d dispatches, rollback %+v: want failed after the prepare alone", r.Machine.Status,
			len(h.gh.Dispatches(testRepo)), r.Machine.Rollback)
	}
}

// batch_bake waits between the batches of a pass (without probes it is a
// durable wait): the second batch of eu-1a leaves 2m after the first ended.
func TestBatchBakeHoldsTheNextBatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "", time.Minute)
	cfg := strings.Replace(mustFile(h), "          - {host: eu1-b-01,",
		"          - {host: eu1-a-03, labels: {region: eu-1, az: eu-1a}}\n          - {host: eu1-b-01,", 1)
	cfg = strings.Replace(cfg, `by: az, bake: 1m0s}`, `by: az, bake: 1m0s, batch_bake: 2m}`, 1)
	h.gh.PutFile(testRepo, "main", ".github/ripcord.yml", cfg)
	h.start(nil)
	r := h.run(nil)
	if r.Machine.Status != Succeeded {
		t.Fatalf("status %s (%s)", r.Machine.Status, r.Machine.Failure)
	}
	at := func(name string) time.Time {
		var us int64
		if err := h.x.deps.DB.Read.QueryRow(`SELECT dispatched_at FROM rollout_batches WHERE name = $1`, name).Scan(&us); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return time.UnixMicro(us)
	}
	if gap := at("deploy@eu-1/eu-1/eu-1a#1").Sub(at("deploy@eu-1/eu-1/eu-1a#0")); gap != 2*time.Minute {
		t.Errorf("second batch of eu-1a %s after the first, want batch_bake 2m", gap)
	}
}

// A crash after a batch was claimed but before GitHub answered leaves it
// "dispatching": it is never sent again, and its queue_timeout fails it.
func TestAClaimedBatchIsNeverDispatchedAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "", time.Minute)
	h.start(nil)
	ctx := context.Background()
	err := h.x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		_, err := claimBatch(ctx, tx, h.id, Ref{Kind: KindDeploy}, "deploy@canary#0", h.clock.Now())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	r := h.run(nil)
	if n := len(h.gh.Dispatches(testRepo)); n != 0 {
		t.Errorf("%d dispatches of a batch claimed before the crash, want 0", n)
	}
	if r.Machine.Status != Failed || !strings.Contains(r.Machine.Failure, "no runner for region eu-1") {
		t.Errorf("status %s failure %q", r.Machine.Status, r.Machine.Failure)
	}
}

// A second abort before the first is carried out is refused (409), not an
// internal error.
func TestASecondAbortIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "", time.Minute)
	h.start(nil)
	if _, err := h.x.abort(context.Background(), h.id, "bob", "pager"); err != nil {
		t.Fatal(err)
	}
	_, err := h.x.abort(context.Background(), h.id, "alice", "again")
	var refused *Refused
	if !errors.As(err, &refused) || !strings.Contains(refused.Reason, "aborted already") {
		t.Fatalf("second abort: %v, want a refusal saying it was aborted already", err)
	}
}

// A run deleted on GitHub (404 on its run) counts as a failed run of its
// batch, so a scheduled tick moves the rollout on instead of failing for
// ever; a GitHub outage (5xx) leaves the batch as it was, for the next poll.
func TestADeletedRunFailsItsBatchAndAnOutageFailsNone(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "", time.Minute)
	h.hold = true
	h.start(nil)
	h.tick()
	run := h.gh.Dispatches(testRepo)[0].RunID
	status := http.StatusBadGateway
	h.gh.Handle("GET /repos/{owner}/{repo}/actions/runs/{run_id}", func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, `{"message":"Not Found"}`)
	})

	h.clock.set(h.rollout().WakeAt)
	h.tickAs(true)
	runs, err := loadRuns(context.Background(), h.x.deps.DB.Read, h.id)
	if err != nil {
		t.Fatal(err)
	}
	for ref, r := range runs {
		if r.State != RunQueued {
			t.Fatalf("batch %+v is %s after a 502, want it left queued", ref, r.State)
		}
	}

	status = http.StatusNotFound
	r := h.run(nil)
	if r.Machine.Status != Failed {
		t.Fatalf("status %s, want the rollout failed by its deleted run", r.Machine.Status)
	}
	want := fmt.Sprintf("workflow run %d failed", run)
	if !strings.Contains(r.Machine.Failure, want) || !strings.Contains(r.Machine.Failure, "deleted") {
		t.Errorf("failure %q, want %q and that the run was deleted", r.Machine.Failure, want)
	}
}
