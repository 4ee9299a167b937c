package rolloutflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/rollout"
)

// runnerConfig is one stage over two hosts of eu-1 that bakes a minute,
// read every 30s by probes the region's runners send (from: runners is
// the default).
func runnerConfig(a, b *target) string {
	return fmt.Sprintf(`version: 1
apps:
  checkout:
    environments:
      prod:
        cluster: prod-eu
        targets:
          - {host: "%s", labels: {region: eu-1, az: eu-1a}}
          - {host: "%s", labels: {region: eu-1, az: eu-1a}}
        rollout:
          max_unavailable: 100%%
          waves:
            - {name: all, select: "region=eu-1", bake: 1m}
          health:
            interval: 30s
            probes:
              - {url: "http://{host}/healthz"}
`, a.host(), b.host())
}

// probeDispatches are the probe workflow's dispatches GitHub received.
func (h *harness) probeDispatches() []githubtest.Dispatch {
	var out []githubtest.Dispatch
	for _, d := range h.gh.Dispatches(testRepo) {
		if d.Workflow == rollout.DefaultProbeWorkflow {
			out = append(out, d)
		}
	}
	return out
}

// runProbes plays the region's runners for a probe dispatch: it sends
// every probe of the probes input, as the action's probe mode does, and
// posts what it saw.
func (h *harness) runProbes(d githubtest.Dispatch) error {
	var probes []ProbeTarget
	if err := json.Unmarshal([]byte(fmt.Sprint(d.Inputs["probes"])), &probes); err != nil {
		h.t.Fatalf("probes input %v: %v", d.Inputs["probes"], err)
	}
	post := ProbePost{Reading: fmt.Sprint(d.Inputs["reading"]), WorkflowRunID: d.RunID}
	for _, p := range probes {
		res := RunnerProbe{URL: p.URL, Host: p.Host}
		if resp, err := http.Get(p.URL); err != nil {
			res.Error = err.Error()
		} else {
			res.Status = resp.StatusCode
			resp.Body.Close()
		}
		post.Results = append(post.Results, res)
	}
	_, err := h.x.acceptProbes(context.Background(), fmt.Sprint(d.Inputs["rollout_id"]), testRepo, post)
	return err
}

// acceptProbes is what postProbes does with the runners' post once their
// token is of repository and their environment's oidc rule (which the
// server checks, e2e_probes_oidc_test.go) lets them post.
func (x *executor) acceptProbes(ctx context.Context, id, repository string, p ProbePost) (ProbeAnswer, error) {
	r, err := x.probedRollout(ctx, id, repository)
	if err != nil {
		return ProbeAnswer{}, err
	}
	return x.storeProbes(ctx, r, p)
}

// runWithRunners drives the rollout as run does, with runners that answer
// each probe dispatch unless silent.
func (h *harness) runWithRunners(silent bool) Rollout {
	h.t.Helper()
	answered, scheduled := 0, false
	for range 1000 {
		h.tickAs(scheduled)
		r := h.rollout()
		if r.Machine.Phase == PhaseDone {
			return r
		}
		if h.finishRuns() {
			scheduled = false
			continue
		}
		if ds := h.probeDispatches(); !silent && answered < len(ds) {
			for _, d := range ds[answered:] {
				if err := h.runProbes(d); err != nil {
					h.t.Fatalf("post the probes of %v: %v", d.Inputs["reading"], err)
				}
			}
			answered, scheduled = len(ds), false
			continue
		}
		if r.WakeAt.IsZero() {
			return r
		}
		h.clock.set(r.WakeAt)
		scheduled = true
	}
	h.t.Fatal("the rollout never settled")
	return Rollout{}
}

func newRunnerHarness(t *testing.T, dbURL string, a, b *target) *harness {
	h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
	h.gh.PutFile(testRepo, "main", ".github/ripcord.yml", runnerConfig(a, b))
	h.start(nil)
	return h
}

func TestRunnerProbesArriveAndTheStagePasses(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, runnerProbesArrive)
}

func runnerProbesArrive(t *testing.T, dbURL string) {
	a, b := twoTargets(t)
	h := newRunnerHarness(t, dbURL, a, b)
	r := h.runWithRunners(false)
	if r.Machine.Status != Succeeded {
		t.Fatalf("status %s (%s), want succeeded", r.Machine.Status, r.Machine.Failure)
	}
	// A minute's bake read every 30s: two readings, one probe workflow each
	// (one pass), each probing both hosts from the runners, not the server.
	ds := h.probeDispatches()
	if len(ds) != 2 || a.probes.Load() != 2 || b.probes.Load() != 2 {
		t.Fatalf("%d probe dispatches, %d and %d probes; want 2, 2, 2", len(ds), a.probes.Load(), b.probes.Load())
	}
	d := ds[0]
	wantProbes := fmt.Sprintf(`[{"url":"http://%s/healthz","host":"%[1]s","expect_status":200},{"url":"http://%s/healthz","host":"%[2]s","expect_status":200}]`,
		a.host(), b.host())
	if d.Ref != "main" || d.Inputs["region"] != "eu-1" || d.Inputs["rollout_id"] != h.id || d.Inputs["reading"] != "0.0.-1.1" ||
		d.Inputs["probes"] != wantProbes || d.Inputs["targets"] != fmt.Sprintf(`["%s","%s"]`, a.host(), b.host()) {
		t.Errorf("first probe dispatch %+v\nwant probes %s", d, wantProbes)
	}
	// Results that arrive at once are judged at once: the bake took no
	// longer than its minute.
	if got := h.clock.Now().Sub(r.Machine.Bake.From); got != time.Minute {
		t.Errorf("the bake took %s, want 1m", got)
	}
	greens := 0
	if err := h.x.deps.DB.Read.QueryRow(`SELECT COUNT(*) FROM rollout_readings WHERE rollout_id = $1 AND green`, h.id).Scan(&greens); err != nil || greens != 2 {
		t.Errorf("%d green readings (%v), want 2", greens, err)
	}
}

func TestRunnerProbesThatDoNotArriveAreRed(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, runnerProbesMissing)
}

func runnerProbesMissing(t *testing.T, dbURL string) {
	a, b := twoTargets(t)
	h := newRunnerHarness(t, dbURL, a, b)
	r := h.runWithRunners(true)
	if r.Machine.Status != Failed || !strings.Contains(r.Machine.Failure, "no result from the runners in eu-1") {
		t.Fatalf("status %s, failure %q; want failed for no result from the runners in eu-1", r.Machine.Status, r.Machine.Failure)
	}
	// failures_to_stop 1: the first reading, red an interval after its
	// probes were asked for, ends the stage.
	if len(h.probeDispatches()) != 1 {
		t.Errorf("%d probe dispatches, want 1", len(h.probeDispatches()))
	}
	// A runner that answers after the interval is told the reading is over.
	err := h.runProbes(h.probeDispatches()[0])
	var late *badRequest
	if !errors.As(err, &late) || late.status != http.StatusConflict {
		t.Errorf("late results: %v, want 409", err)
	}
}

func TestRunnerProbesSeeARedTarget(t *testing.T) {
	t.Parallel()
	a, b := twoTargets(t)
	b.status.Store(503)
	h := newRunnerHarness(t, testdb.MigratedURL(t, "sqlite"), a, b)
	r := h.runWithRunners(false)
	g := r.Machine.Stages[0].Gate
	if r.Machine.Status != Failed || !strings.Contains(g, b.host()) || !strings.Contains(g, "status 503") || strings.Contains(g, a.host()) {
		t.Fatalf("status %s, gate %q; want failed naming %s and its 503 only", r.Machine.Status, g, b.host())
	}
}

func TestRunnerProbePostsAreChecked(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, runnerProbePosts)
}

func runnerProbePosts(t *testing.T, dbURL string) {
	a, b := twoTargets(t)
	h := newRunnerHarness(t, dbURL, a, b)
	h.tickAs(false)
	for h.finishRuns() {
		h.tickAs(false)
	}
	h.clock.set(h.rollout().WakeAt)
	h.tickAs(true)
	ds := h.probeDispatches()
	if len(ds) != 1 {
		t.Fatalf("%d probe dispatches at the first reading, want 1", len(ds))
	}
	reading := fmt.Sprint(ds[0].Inputs["reading"])
	ok := RunnerProbe{URL: "http://" + a.host() + "/healthz", Host: a.host(), Status: 200}
	for _, tc := range []struct {
		name   string
		repo   string
		post   ProbePost
		status int
	}{
		{"a token of another repository", "acme/other", ProbePost{Reading: reading, Results: []RunnerProbe{ok}}, http.StatusForbidden},
		{"a reading never asked for", testRepo, ProbePost{Reading: "0.0.-1.9", Results: []RunnerProbe{ok}}, http.StatusConflict},
		{"no reading", testRepo, ProbePost{Results: []RunnerProbe{ok}}, http.StatusUnprocessableEntity},
		{"a probe of a host outside the reading", testRepo, ProbePost{Reading: reading,
			Results: []RunnerProbe{{URL: "http://elsewhere/healthz", Host: "elsewhere", Status: 200}}}, http.StatusUnprocessableEntity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.x.acceptProbes(context.Background(), h.id, tc.repo, tc.post)
			var bad *badRequest
			if !errors.As(err, &bad) || bad.status != tc.status {
				t.Errorf("error %v, want %d", err, tc.status)
			}
		})
	}
	// Only a's result: b's missing one is red.
	post := ProbePost{Reading: reading, Results: []RunnerProbe{ok}}
	if ans, err := h.x.acceptProbes(context.Background(), h.id, testRepo, post); err != nil || ans.Outcome != "stored" {
		t.Fatalf("first post: %+v %v", ans, err)
	}
	if ans, err := h.x.acceptProbes(context.Background(), h.id, testRepo, post); err != nil || ans.Outcome != "duplicate" {
		t.Errorf("the same post again: %+v %v, want duplicate", ans, err)
	}
	h.tickAs(false)
	if g := h.rollout().Machine.Stages[0].Gate; !strings.Contains(g, b.host()) || !strings.Contains(g, "no result from the runners in eu-1") {
		t.Errorf("gate %q, want %s without result", g, b.host())
	}
}

// A batch gate (batch_bake) asks the runners about the batch's hosts only.
func TestRunnerProbesOfABatchGateProbeTheBatch(t *testing.T) {
	t.Parallel()
	a, b := twoTargets(t)
	h := newHarness(t, "stop", "", time.Minute)
	cfg := strings.Replace(runnerConfig(a, b), "max_unavailable: 100%", "max_unavailable: 1", 1)
	cfg = strings.Replace(cfg, "bake: 1m}", "bake: 0s, batch_bake: 0s}", 1)
	h.gh.PutFile(testRepo, "main", ".github/ripcord.yml", cfg)
	h.start(nil)
	r := h.runWithRunners(false)
	if r.Machine.Status != Succeeded {
		t.Fatalf("status %s (%s), want succeeded", r.Machine.Status, r.Machine.Failure)
	}
	ds := h.probeDispatches()
	if len(ds) != 2 {
		t.Fatalf("%d probe dispatches, want the batch gate's and the stage gate's", len(ds))
	}
	if got := ds[0].Inputs["targets"]; got != fmt.Sprintf(`["%s"]`, a.host()) || ds[0].Inputs["reading"] != "0.0.0.1" {
		t.Errorf("batch gate's probes: reading %v targets %v, want 0.0.0.1 on %s alone", ds[0].Inputs["reading"], got, a.host())
	}
	if a.probes.Load() != 2 || b.probes.Load() != 1 {
		t.Errorf("probes: a %d, b %d; want a by both gates, b by the stage gate", a.probes.Load(), b.probes.Load())
	}
}
