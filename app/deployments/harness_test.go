package deployments

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testlog"
	"github.com/ripcord/ripcord/records"
)

const (
	repository = "acme/checkout"
	publicURL  = "https://ripcord.example"
)

// env is the deployment worker on a real database and job queue, talking
// to the fake GitHub through ghclient, with a switch that takes GitHub down.
type env struct {
	t      *testing.T
	db     *store.DB
	recs   *records.Store
	rc     *river.Client[*sql.Tx]
	gh     *githubtest.Server
	net    *network
	deps   pipeline.Deps
	minute int // the facts' clock, in minutes from t0
	gens   map[string]int64
}

var t0 = time.Date(2026, 10, 10, 9, 0, 0, 0, time.UTC)

func newEnv(t *testing.T, dbURL string) *env {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, db: db, recs: records.NewStore(db), gh: githubtest.NewServer(t), net: &network{},
		gens: map[string]int64{}}
	cc, err := ghclient.New(ghclient.Config{AppID: githubtest.AppID, PrivateKey: githubtest.AppPrivateKey(t),
		APIURL: e.gh.URL(), Clock: ghclient.NewStepClock(time.Now()), Transport: e.net})
	if err != nil {
		t.Fatal(err)
	}
	workers := river.NewWorkers()
	e.deps = pipeline.Deps{Config: &config.Config{PublicURL: publicURL}, DB: db, Records: e.recs,
		River: func() *river.Client[*sql.Tx] { return e.rc }, GitHub: cc, Workers: workers, Mux: http.NewServeMux(),
		Registerer: prometheus.NewRegistry(), Log: testlog.New(t),
		Now: func() time.Time { return time.Now().UTC() }, APIAuth: func(h http.HandlerFunc) http.HandlerFunc { return h }}
	Register(e.deps)
	e.rc, err = river.NewClient(db.RiverDriver(), &river.Config{
		Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}}, Workers: workers,
		FetchCooldown: 5 * time.Millisecond, FetchPollInterval: 20 * time.Millisecond,
		RetryPolicy: quickRetry{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	if err := e.rc.Start(runCtx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		<-e.rc.Stopped()
	})
	return e
}

// install records the App's installation on repo, as the installation
// webhook does.
func (e *env) install(repo string) {
	e.t.Helper()
	now := store.Micros(time.Now())
	_, err := e.db.Write.Exec(`INSERT INTO installations (id, account, created_at, updated_at) VALUES ($1, 'acme', $2, $2)
		ON CONFLICT (id) DO NOTHING`, githubtest.InstallationID, now)
	if err == nil {
		_, err = e.db.Write.Exec(`INSERT INTO installation_repositories (installation_id, repository, added_at) VALUES ($1, $2, $3)`,
			githubtest.InstallationID, repo, now)
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

func sha(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:20])
}

// newRelease is a checkout release to production in prod-eu.
func newRelease(id string) records.Record {
	return records.Record{ReleaseID: id, App: "checkout", Environment: "production", Cluster: "prod-eu",
		Repository: repository, Kind: records.KindPromote, Image: "ghcr.io/acme/checkout@sha256:" + sha(id) + sha(id)[:24],
		GitRevision: sha(id)}
}

// open opens r as POST /api/v1/releases does, queueing in the same
// transaction.
func (e *env) open(r records.Record) {
	e.t.Helper()
	err := e.db.InDurableTx(context.Background(), func(tx *sql.Tx) error {
		opened, _, err := e.recs.OpenRelease(context.Background(), tx, r, e.now())
		if err != nil {
			return err
		}
		return Queue(context.Background(), tx, e.rc, e.deps.Log, []records.Record{opened})
	})
	if err != nil {
		e.t.Fatalf("open %s: %v", r.ReleaseID, err)
	}
}

// observe applies a Rollout fact on r's workload as POST /api/v1/facts
// does, and returns how many records it changed.
func (e *env) observe(r records.Record, phase records.Phase, step int) int {
	e.t.Helper()
	// Each release is a new generation of the one workload.
	gen, ok := e.gens[r.ReleaseID]
	if !ok {
		gen = int64(len(e.gens) + 2)
		e.gens[r.ReleaseID] = gen
	}
	f := records.Fact{Source: records.SourceRollout, Cluster: r.Cluster, Namespace: "checkout", Name: "checkout",
		UID: "uid-checkout", Generation: gen, ObservedGeneration: gen, Phase: phase, Step: step, StepCount: 4,
		PodHash: "hash-" + r.ReleaseID, Images: []string{r.Image}, ReleaseID: r.ReleaseID, ObservedAt: e.now()}
	if phase == records.PhaseDegraded {
		f.Abort = true
	}
	var changed int
	err := e.db.InDurableTx(context.Background(), func(tx *sql.Tx) error {
		res, err := e.recs.ApplyFact(context.Background(), tx, f, "", e.now())
		if err != nil {
			return err
		}
		changed = len(res.Records)
		return Queue(context.Background(), tx, e.rc, e.deps.Log, res.Records)
	})
	if err != nil {
		e.t.Fatalf("fact %s %s: %v", r.ReleaseID, phase, err)
	}
	return changed
}

// now moves the facts' clock a minute on: facts and records need order.
func (e *env) now() time.Time {
	e.minute++
	return t0.Add(time.Duration(e.minute) * time.Minute)
}

// settle waits until no deployment sync is waiting, running or retrying.
func (e *env) settle() {
	e.t.Helper()
	e.waitFor("deployment syncs to settle", func() bool {
		return e.count(`SELECT COUNT(*) FROM river_job WHERE kind = 'deployment_sync'
			AND state NOT IN ('completed', 'discarded', 'cancelled')`) == 0
	})
	if n := e.count(`SELECT COUNT(*) FROM river_job WHERE kind = 'deployment_sync' AND state <> 'completed'`); n != 0 {
		e.t.Fatalf("%d deployment syncs did not complete", n)
	}
}

func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *env) count(q string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.Read.QueryRow(q, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	return n
}

// deploymentsOf are the fake GitHub's deployments of one release.
func (e *env) deploymentsOf(releaseID string) []githubtest.Deployment {
	var out []githubtest.Deployment
	for _, d := range e.gh.Deployments(repository) {
		if p, ok := d.Payload.(map[string]any); ok && p["release_id"] == releaseID {
			out = append(out, d)
		}
	}
	return out
}

// statuses are the states written to release's one deployment, oldest
// first; the test fails unless there is exactly one deployment.
func (e *env) statuses(releaseID string) string {
	e.t.Helper()
	ds := e.deploymentsOf(releaseID)
	if len(ds) != 1 {
		e.t.Fatalf("%s has %d GitHub deployments, want 1", releaseID, len(ds))
	}
	var s []string
	for _, st := range ds[0].Statuses {
		s = append(s, st.State)
	}
	return strings.Join(s, " ")
}

// writes counts the deployment writes GitHub received.
func (e *env) writes() int {
	return e.gh.Count("POST", "/repos/{owner}/{repo}/deployments") +
		e.gh.Count("POST", "/repos/{owner}/{repo}/deployments/{deployment_id}/statuses")
}

// network carries requests to the fake GitHub, or fails them: down answers
// 503 without reaching GitHub; loseAnswers lets that many deployment
// writes reach GitHub and then answers 502, as when an answer is lost.
type network struct {
	mu          sync.Mutex
	down        bool
	loseAnswers int
}

func (n *network) set(down bool, loseAnswers int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.down, n.loseAnswers = down, loseAnswers
}

func (n *network) RoundTrip(r *http.Request) (*http.Response, error) {
	n.mu.Lock()
	down := n.down
	lose := n.loseAnswers > 0 && r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/deployments")
	if lose {
		n.loseAnswers--
	}
	n.mu.Unlock()
	if down {
		return fail(r, http.StatusServiceUnavailable), nil
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || !lose {
		return resp, err
	}
	resp.Body.Close()
	return fail(r, http.StatusBadGateway), nil
}

func fail(r *http.Request, code int) *http.Response {
	return &http.Response{StatusCode: code, Status: http.StatusText(code), Request: r, Header: http.Header{},
		Body: io.NopCloser(strings.NewReader(`{"message":"unavailable"}`))}
}

// quickRetry retries a failed job at once, so "later" comes soon.
type quickRetry struct{}

func (quickRetry) NextRetry(*rivertype.JobRow) time.Time {
	return time.Now().Add(20 * time.Millisecond)
}
