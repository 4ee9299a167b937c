package webui

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/testdb"
)

type fakeRollouts struct {
	stages map[string][]Stage
	err    error
}

func (f fakeRollouts) Stages(_ context.Context, id string) ([]Stage, bool, error) {
	s, ok := f.stages[id]
	return s, ok, f.err
}

func TestReleasePageShowsRolloutStages(t *testing.T) {
	f := newFixture(t, testdb.URL(t, "sqlite"))
	f.seedShop(t)
	app := appWith("https://github.example/")
	started := t0.Add(2 * time.Hour)
	rollouts := fakeRollouts{stages: map[string][]Stage{"shop-3": {
		{Name: "canary", State: "succeeded", StartedAt: &started},
		{Name: "eu-west-1", State: "failed", Message: "gate error-rate: 7% > 2%"},
		{Name: "us-east-1", State: "pending"},
	}}}
	d := pipeline.Deps{Config: newTestConfig(), Records: f.st, App: func() pipeline.AppIdentity { return app },
		Now: func() time.Time { return now }}
	mux := http.NewServeMux()
	newHandler(d, newFakeGitHub(), rollouts).routes(mux)
	alice := sessionCookieFor(t, app, "alice", "tok-alice")

	b := body(get(t, mux, "/releases/shop-3", alice))
	canary, eu, us := strings.Index(b, "canary"), strings.Index(b, "eu-west-1"), strings.Index(b, "us-east-1")
	if canary < 0 || !(canary < eu && eu < us) || !strings.Contains(b, "gate error-rate: 7% &gt; 2%") {
		t.Errorf("stages missing or out of order (%d %d %d):\n%s", canary, eu, us, b)
	}
	if strings.Contains(b, "no rollout") {
		t.Error("a release with stages says no rollout")
	}
	if b := body(get(t, mux, "/releases/shop-2", alice)); !strings.Contains(b, "no rollout") {
		t.Error("a release without a rollout does not say so")
	}

	broken := http.NewServeMux()
	newHandler(d, newFakeGitHub(), fakeRollouts{err: errors.New("db down")}).routes(broken)
	if w := get(t, broken, "/releases/shop-3", alice); w.Code != http.StatusInternalServerError || strings.Contains(body(w), "db down") {
		t.Errorf("a failing rollout source = %d; want 500 without the internal error", w.Code)
	}
}
