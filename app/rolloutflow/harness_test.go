package rolloutflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/internal/testlog"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/repoconfig"
)

const testRepo = "acme/checkout"

// t0 is when every test's fake clock starts.
var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// fakeClock moves only when the test moves it.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.set(c.Now().Add(d))
	return ctx.Err()
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
}

// prom is a Prometheus-compatible instant query API on loopback: the
// error rate of an AZ is red[az] when set, else 0; an AZ in noData returns
// an empty vector.
type prom struct {
	mu      sync.Mutex
	red     map[string]float64
	noData  map[string]bool
	queries map[string]int // by az
	srv     *httptest.Server
}

func newProm(t *testing.T) *prom {
	p := &prom{red: map[string]float64{}, noData: map[string]bool{}, queries: map[string]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query().Get("query")
		az := ""
		if i := strings.Index(q, `az="`); i >= 0 {
			az, _, _ = strings.Cut(q[i+4:], `"`)
		}
		p.mu.Lock()
		p.queries[az]++
		v, empty := p.red[az], p.noData[az]
		p.mu.Unlock()
		result := []any{}
		if !empty {
			result = append(result, map[string]any{"metric": map[string]string{"az": az},
				"value": []any{1.7e9, fmt.Sprint(v)}})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success",
			"data": map[string]any{"resultType": "vector", "result": result}})
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *prom) set(az string, v float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.red[az] = v
}

func (p *prom) count(az string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.queries[az]
}

// config is 3 regions in 4 stages: canary (eu1-a-01), eu-1/eu-1a
// (eu1-a-02), eu-1/eu-1b (eu1-b-01), resto/eu-2a+us-1a.
func config(promURL, onFailure, approvals string, bake time.Duration) string {
	return fmt.Sprintf(`version: 1
apps:
  checkout:
    environments:
      prod:
        cluster: prod-eu
        rollback: {mode: workflow, workflow: deploy.yml, input: version}
        targets:
          - {host: eu1-a-01, labels: {region: eu-1, az: eu-1a, canary: "true"}}
          - {host: eu1-a-02, labels: {region: eu-1, az: eu-1a}}
          - {host: eu1-b-01, labels: {region: eu-1, az: eu-1b}}
          - {host: eu2-a-01, labels: {region: eu-2, az: eu-2a}}
          - {host: us1-a-01, labels: {region: us-1, az: us-1a}}
        rollout:
          regions: [eu-1, eu-2, us-1]
          prometheus_url: %s
          waves:
            - {name: canary, select: "canary=true", bake: %s}
            - {name: eu-1, select: "region=eu-1, canary!=true", by: az, bake: %s}
            - {name: resto, select: "region in (eu-2, us-1)", by: az, parallel_regions: 2, bake: %s}
          on_failure: %s
          approvals_between: [%s]
          health:
            interval: 30s
            failures_to_stop: 2
            metrics:
              - {name: error-rate, query: 'errors{app="{application}",az="{az}"}', max: 0.01}
`, promURL, bake, bake, bake, onFailure, approvals)
}

// harness is the executor on a real database and the fake GitHub, with an
// insert-only job queue: the test runs ticks and delivers run events.
type harness struct {
	t      *testing.T
	dbURL  string
	clock  *fakeClock
	gh     *githubtest.Server
	prom   *prom
	reg    *prometheus.Registry
	x      *executor
	id     string
	failAt map[string]bool // batch names whose runs conclude failure
	hold   bool            // runs never end (no runner picks them up)
}

func newHarness(t *testing.T, onFailure, approvals string, bake time.Duration) *harness {
	t.Helper()
	return newHarnessOn(t, testdb.MigratedURL(t, "sqlite"), onFailure, approvals, bake)
}

// newHarnessOn is newHarness on the database at dbURL (testdb.Each).
func newHarnessOn(t *testing.T, dbURL, onFailure, approvals string, bake time.Duration) *harness {
	t.Helper()
	h := &harness{t: t, dbURL: dbURL, clock: &fakeClock{now: t0}, gh: githubtest.NewServer(t),
		prom: newProm(t), reg: prometheus.NewRegistry(), failAt: map[string]bool{}}
	h.gh.PutFile(testRepo, "main", ".github/ripcord.yml", config(h.prom.srv.URL, onFailure, approvals, bake))
	h.x = h.executor()
	ctx := context.Background()
	db := h.x.deps.DB
	if _, err := db.Write.ExecContext(ctx, `INSERT INTO installations (id, created_at, updated_at) VALUES ($1, 0, 0)`,
		githubtest.InstallationID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Write.ExecContext(ctx, `INSERT INTO installation_repositories (installation_id, repository, added_at)
		VALUES ($1, $2, 0)`, githubtest.InstallationID, testRepo); err != nil {
		t.Fatal(err)
	}
	h.open("r1:prod-eu/prod", "v1")
	// r1 is the release the hosts run: it ran, and was healthy.
	h.ran("r1:prod-eu/prod", "v1", 9000, records.TaskSuccess)
	h.clock.set(t0.Add(time.Second))
	h.open("r2:prod-eu/prod", "v2")
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range h.gh.Requests() {
				t.Logf("GitHub: %s %s %d %s", r.Method, r.Path, r.Status, r.Invalid)
			}
		}
	})
	return h
}

// executor is a fresh executor on the harness's database, as a restarted
// server builds it.
func (h *harness) executor() *executor {
	t := h.t
	ctx := context.Background()
	db, err := store.Open(ctx, h.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	rc := testdb.InsertOnlyRiver(t, db)
	cc, err := ghclient.New(ghclient.Config{AppID: githubtest.AppID, PrivateKey: githubtest.AppPrivateKey(t),
		APIURL: h.gh.URL(), Clock: h.clock})
	if err != nil {
		t.Fatal(err)
	}
	d := pipeline.Deps{DB: db, Records: records.NewStore(db), River: func() *river.Client[*sql.Tx] { return rc },
		GitHub: cc, Registerer: h.reg, Log: testlog.New(t), Now: h.clock.Now}
	return newExecutor(d)
}

func (h *harness) open(id, version string) {
	h.t.Helper()
	rec := records.Record{ReleaseID: id, App: "checkout", Environment: "prod", Cluster: "prod-eu", Repository: testRepo,
		Image: version, Kind: records.KindPromote, GitRevision: strings.Repeat("a", 40)}
	err := h.x.deps.DB.InTx(context.Background(), func(tx *sql.Tx) error {
		_, _, err := h.x.deps.Records.OpenRelease(context.Background(), tx, rec, h.clock.Now())
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

// start starts the rollout of r2, authored by alice; edit may change the
// snapshot first (freezes the config cannot express yet).
func (h *harness) start(edit func(*Snapshot)) {
	h.t.Helper()
	ctx := context.Background()
	cfg, problems := repoconfig.Load([]byte(mustFile(h)))
	if len(problems) > 0 {
		h.t.Fatalf("config: %v", problems)
	}
	env, _ := cfg.Environment("checkout", "prod")
	snap := Snapshot{Plan: env.Plan, Settings: SettingsFor(env.Plan, "main")}
	if edit != nil {
		edit(&snap)
	}
	rec, err := h.x.deps.Records.Get(ctx, "r2:prod-eu/prod")
	if err != nil {
		h.t.Fatal(err)
	}
	r, err := h.x.create(ctx, rec, githubtest.InstallationID, snap, "alice")
	if err != nil {
		h.t.Fatal(err)
	}
	h.id = r.ID
}

func mustFile(h *harness) string {
	s, ok := h.gh.FileAt(testRepo, "main", ".github/ripcord.yml")
	if !ok {
		h.t.Fatal("no config in the fake GitHub")
	}
	return s
}

func (h *harness) rollout() Rollout {
	h.t.Helper()
	r, err := getRollout(context.Background(), h.x.deps.DB.Read, h.id)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// tick runs a tick as an event queues it; scheduled ones come from run.
func (h *harness) tick() { h.tickAs(false) }

func (h *harness) tickAs(scheduled bool) {
	h.t.Helper()
	if err := h.x.Tick(context.Background(), h.id, scheduled); err != nil {
		h.t.Fatalf("tick at %s: %v", h.clock.Now().Format(time.TimeOnly), err)
	}
}

// deliverRun completes a run on the fake GitHub and hands the
// workflow_run handler its event.
func (h *harness) deliverRun(runID int64, conclusion string) {
	h.t.Helper()
	h.gh.CompleteRun(testRepo, runID, conclusion)
	body, _ := json.Marshal(map[string]any{"action": "completed",
		"workflow_run": map[string]any{"id": runID, "status": "completed", "conclusion": conclusion},
		"repository":   map[string]any{"full_name": testRepo}})
	commit, err := runHandler{x: h.x}.Handle(context.Background(), pipeline.Delivery{Event: "workflow_run", Body: body})
	if err != nil {
		h.t.Fatal(err)
	}
	if commit == nil {
		return
	}
	if err := h.x.deps.DB.InTx(context.Background(), func(tx *sql.Tx) error { return commit(context.Background(), tx) }); err != nil {
		h.t.Fatal(err)
	}
}

// finishRuns completes every run that is queued: failure for the batches
// in failAt, success for the others. It reports whether it did anything.
func (h *harness) finishRuns() bool {
	h.t.Helper()
	ds, err := listDispatched(context.Background(), h.x.deps.DB.Read, h.id)
	if err != nil {
		h.t.Fatal(err)
	}
	did := false
	for _, d := range ds {
		if h.hold {
			break
		}
		if d.State == RunQueued || d.State == RunInProgress {
			c := "success"
			if h.failAt[d.Name] {
				c = "failure"
			}
			h.deliverRun(d.RunID, c)
			did = true
		}
	}
	return did
}

// run drives the rollout: ticks, run events, and the clock moved to each
// wake-up, until stop says so or the rollout has ended.
func (h *harness) run(stop func(Rollout) bool) Rollout {
	h.t.Helper()
	scheduled := false
	for range 10000 {
		h.tickAs(scheduled)
		r := h.rollout()
		if r.Machine.Phase == PhaseDone || (stop != nil && stop(r)) {
			return r
		}
		if h.finishRuns() {
			scheduled = false
			continue
		}
		if r.WakeAt.IsZero() {
			return r // waits for an event the test must send
		}
		h.clock.set(r.WakeAt)
		scheduled = true
	}
	h.t.Fatal("the rollout never settled")
	return Rollout{}
}

// dispatches lists the dispatches GitHub received as "batch version".
func (h *harness) dispatches() []string {
	var out []string
	for _, d := range h.gh.Dispatches(testRepo) {
		out = append(out, fmt.Sprintf("%v %v", d.Inputs["batch"], d.Inputs["version"]))
	}
	return out
}

func (h *harness) passes(outcome string) float64 {
	var n float64
	for _, lv := range [][2]string{{"eu-1", "eu-1a"}, {"eu-1", "eu-1b"}, {"eu-2", "eu-2a"}, {"us-1", "us-1a"}} {
		n += testutil.ToFloat64(h.x.metrics.passes.WithLabelValues("checkout", "prod", lv[0], lv[1], outcome))
	}
	return n
}
