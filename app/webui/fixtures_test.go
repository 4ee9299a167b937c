package webui

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/records"
)

// t0 is when the seeded history starts; tests read the pages at t0+3h.
var t0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

// fixture is a migrated database with release records in it.
type fixture struct {
	db  *store.DB
	st  *records.Store
	run int64
}

func newFixture(t testing.TB, dbURL string) *fixture {
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
	return &fixture{db: db, st: records.NewStore(db)}
}

// release reports a deploy workflow's outcome for one release, as
// POST /api/v1/facts does; the first report opens the record.
type release struct {
	id, app, env, cluster, repo, image string
	status                             records.TaskStatus
	at                                 time.Time
}

func (f *fixture) report(t testing.TB, r release) {
	t.Helper()
	f.run++
	fact := records.Fact{Source: records.SourceTask, Repository: r.repo, WorkflowRunID: f.run, RunAttempt: 1,
		Status: r.status, App: r.app, Environment: r.env, Cluster: r.cluster, ReleaseID: r.id,
		Version: r.image, ObservedAt: r.at}
	if err := fact.Validate(); err != nil {
		t.Fatalf("fact for %s: %v", r.id, err)
	}
	err := f.db.InTx(context.Background(), func(tx *sql.Tx) error {
		_, err := f.st.ApplyFact(context.Background(), tx, fact, "delivery-"+r.id, r.at)
		return err
	})
	if err != nil {
		t.Fatalf("apply fact for %s: %v", r.id, err)
	}
}

// open registers r as release tooling does (POST /api/v1/releases).
func (f *fixture) open(t testing.TB, r records.Record) {
	t.Helper()
	err := f.db.InTx(context.Background(), func(tx *sql.Tx) error {
		_, _, err := f.st.OpenRelease(context.Background(), tx, r, r.CreatedAt)
		return err
	})
	if err != nil {
		t.Fatalf("open %s: %v", r.ReleaseID, err)
	}
}

func (f *fixture) audit(t testing.TB, events ...records.AuditEvent) {
	t.Helper()
	err := f.db.InTx(context.Background(), func(tx *sql.Tx) error {
		return f.st.InsertAudit(context.Background(), tx, events...)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// seedShop is the history most tests read: the shop app of acme/shop in
// production (two healthy releases, then a failed one) and staging, and the
// vault app of acme/secret that only some users can read.
func (f *fixture) seedShop(t testing.TB) {
	t.Helper()
	for _, r := range []release{
		{"shop-1", "shop", "production", "eu-1", "acme/shop", "ghcr.io/acme/shop:v1", records.TaskSuccess, t0},
		{"shop-2", "shop", "production", "eu-1", "acme/shop", "ghcr.io/acme/shop:v2", records.TaskSuccess, t0.Add(time.Hour)},
		{"shop-3", "shop", "production", "eu-1", "acme/shop", "ghcr.io/acme/shop:v3", records.TaskFailed, t0.Add(2 * time.Hour)},
		{"shop-s1", "shop", "staging", "eu-1", "acme/shop", "ghcr.io/acme/shop:v4", records.TaskInProgress, t0.Add(150 * time.Minute)},
		{"vault-1", "vault", "production", "eu-1", "acme/secret", "ghcr.io/acme/vault:v9", records.TaskSuccess, t0.Add(30 * time.Minute)},
	} {
		f.report(t, r)
	}
	// Written out of time order: the timeline must sort by time.
	f.audit(t,
		records.AuditEvent{Type: records.AuditGateEvaluated, ReleaseID: "shop-3", At: t0.Add(2*time.Hour + 20*time.Minute),
			Message: "gate error-rate failed"},
		records.AuditEvent{Type: records.AuditCommandReceived, ReleaseID: "shop-3", At: t0.Add(2*time.Hour + 10*time.Minute),
			Message: "/ripcord retry by octocat", Data: map[string]any{"user": "octocat", "command": "retry"}},
	)
}

// app is an App set up with its OAuth client.
func appWith(webURL string) pipeline.AppIdentity {
	return pipeline.AppIdentity{Configured: true, ID: 42, ClientID: "Iv1.test", ClientSecret: "test-client-secret", WebURL: webURL}
}

// newTestHandler serves the pages on a fresh mux with a fixed clock.
func newTestHandler(f *fixture, publicURL, apiURL string, app func() pipeline.AppIdentity, gh gitHub, now time.Time) (*handler, *http.ServeMux) {
	d := pipeline.Deps{Config: &config.Config{PublicURL: publicURL, GitHub: config.GitHub{APIURL: apiURL}},
		Records: f.st, App: app, Now: func() time.Time { return now }, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Configs: pipeline.NewRepoConfigs()}
	if gh == nil {
		gh = newUserClient(app, apiURL)
	}
	h := newHandler(d, gh, nil)
	mux := http.NewServeMux()
	h.routes(mux)
	return h, mux
}

func newTestConfig() *config.Config {
	return &config.Config{PublicURL: publicURL, GitHub: config.GitHub{APIURL: "https://api.github.example/"}}
}
