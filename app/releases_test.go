package app

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/oidcauth/oidctest"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// sink is a CloudEvents receiver on loopback that keeps the event types.
type sink struct {
	mu    sync.Mutex
	types []string
	ids   []string
}

func newSink(t *testing.T) (*sink, string) {
	s := &sink{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		typ, id := r.Header.Get("Ce-Type"), r.Header.Get("Ce-Id")
		if typ == "" { // structured mode
			var ev struct{ Type, ID string }
			_ = json.Unmarshal(body, &ev)
			typ, id = ev.Type, ev.ID
		}
		s.mu.Lock()
		s.types, s.ids = append(s.types, typ), append(s.ids, id)
		s.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func (s *sink) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.types...)
}

type factAnswer struct {
	ID, Outcome, ReleaseID, State, Reason string
}

func TestReleaseStoryOverTheAPI(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		events, sinkURL := newSink(t)
		ts := startServerWith(t, dbURL, Options{}, func(c *configT) {
			c.Clusters = tokensOf(map[string]string{"prod-eu": "tok-eu"})
			c.CDEventSinks = []string{sinkURL}
		})
		fact := func(phase string, gen int, release, image string) factAnswer {
			var a factAnswer
			if code := ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", clusterFact(phase, gen, release, image), &a); code != 200 {
				t.Fatalf("fact %s %s: status %d %+v", release, phase, code, a)
			}
			return a
		}

		openRelease(t, ts, "r1", imageV1)
		again := map[string]any{"release_id": "r1", "app": "checkout", "environment": "prod", "cluster": "prod-eu",
			"repository": "acme/checkout", "image": imageV1}
		if code := ts.post(t, "/api/v1/releases", testToken, again, nil); code != http.StatusOK {
			t.Errorf("opening the same release again: status %d, want 200", code)
		}
		again["image"] = imageV2
		var conflict apiError
		if code := ts.post(t, "/api/v1/releases", testToken, again, &conflict); code != http.StatusConflict || conflict.Field != "image" {
			t.Errorf("opening r1 with another image: %d %+v, want 409 naming image", code, conflict)
		}

		fact("Progressing", 1, "r1", imageV1)
		if a := fact("Healthy", 1, "r1", imageV1); a.State != "healthy" || a.Outcome != "applied" {
			t.Errorf("Healthy fact: %+v, want applied and healthy", a)
		}
		if a := fact("Healthy", 1, "r1", imageV1); a.Outcome != "duplicate" || a.State != "healthy" {
			t.Errorf("the same fact again: %+v, want duplicate, still healthy", a)
		}

		openRelease(t, ts, "r2", imageV2)
		fact("Progressing", 2, "r2", imageV2)
		fact("Healthy", 2, "r2", imageV2)
		var r1 map[string]any
		ts.api(t, "/api/v1/releases/r1", &r1)
		if r1["state"] != "superseded" || r1["healthy_at"] == nil {
			t.Errorf("r1 after r2 became healthy: state %v healthy_at %v, want superseded and kept", r1["state"], r1["healthy_at"])
		}

		if a := fact("Healthy", 3, "r1", imageV1); a.Outcome != "drift" {
			t.Errorf("a hand revert to r1: %+v, want drift", a)
		}
		var drift struct{ Events []map[string]any }
		ts.api(t, "/api/v1/audit?type=drift_detected", &drift)
		if len(drift.Events) != 1 {
			t.Errorf("drift events: %d, want 1", len(drift.Events))
		}

		var list struct{ Releases []map[string]any }
		ts.api(t, "/api/v1/releases?app=checkout&limit=10", &list)
		if len(list.Releases) != 2 || list.Releases[0]["release_id"] != "r2" {
			t.Errorf("list: %v, want r2 then r1", list.Releases)
		}
		var bad apiError
		if code := ts.api(t, "/api/v1/releases?state=sideways", &bad); code != 400 || bad.Field != "state" {
			t.Errorf("unknown state filter: %d %+v, want 400 naming state", code, bad)
		}
		var timeline struct{ Events []struct{ Type string } }
		ts.api(t, "/api/v1/releases/r1/audit", &timeline)
		var types []string
		for _, e := range timeline.Events {
			types = append(types, e.Type)
		}
		if len(types) == 0 || types[0] != "release_opened" || !strings.Contains(strings.Join(types, ","), "state_changed") {
			t.Errorf("r1's timeline %v should start with release_opened and show its state changes", types)
		}

		waitFor(t, "the CDEvents", 30*time.Second, func() bool { return len(events.got()) >= 2 })
		// Two releases' events are separate jobs: their order is not promised.
		got := strings.Join(events.got(), " ")
		if len(events.got()) != 2 || !strings.Contains(got, "dev.cdevents.service.deployed.0.3.0") ||
			!strings.Contains(got, "dev.cdevents.service.upgraded.0.3.0") {
			t.Errorf("CDEvents %v, want one service.deployed (r1) and one service.upgraded (r2)", got)
		}
	})
}

func TestStalledReleaseRaisesOneStallEvent(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServerWith(t, dbURL, Options{}, func(c *configT) {
			c.StallAfter = 200 * time.Millisecond
		})
		openRelease(t, ts, "quiet", imageV1)
		var stall struct{ Events []map[string]any }
		waitFor(t, "a stall event", 30*time.Second, func() bool {
			ts.api(t, "/api/v1/audit?type=stall_detected", &stall)
			return len(stall.Events) > 0
		})
		if len(stall.Events) != 1 || stall.Events[0]["release_id"] != "quiet" {
			t.Errorf("stall events %v, want one for release quiet", stall.Events)
		}
	})
}

// Releases are opened by more than POST /api/v1/releases: a merged release
// pull request, a rollback pull request, a Kubernetes rollback, the
// rollouts API. Each must stall like one opened through the API (seed 003:
// "a record merged with no fact for N minutes" raises the alert).
func TestReleaseOpenedElsewhereStallsToo(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServerWith(t, dbURL, Options{}, func(c *configT) {
			c.StallAfter = 200 * time.Millisecond
		})
		rec := records.Record{ReleaseID: "merged", App: "checkout", Environment: "prod", Cluster: "prod-eu",
			Repository: "acme/checkout", Image: imageV1, Kind: records.KindPromote}
		err := ts.db.InTx(context.Background(), func(tx *sql.Tx) error {
			_, _, err := ts.records.OpenRelease(context.Background(), tx, rec, time.Now())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		var stall struct{ Events []map[string]any }
		waitFor(t, "a stall event", 30*time.Second, func() bool {
			ts.api(t, "/api/v1/audit?type=stall_detected", &stall)
			return len(stall.Events) > 0
		})
		time.Sleep(time.Second) // the scan runs again meanwhile
		ts.api(t, "/api/v1/audit?type=stall_detected", &stall)
		if len(stall.Events) != 1 || stall.Events[0]["release_id"] != "merged" {
			t.Errorf("stall events %v, want one for release merged", stall.Events)
		}
	})
}

// A release tool with a missing or mistyped api_token is told about the
// api_token, not that its "OIDC token" is malformed; a workflow's refused
// token is still answered as one.
func TestReleaseRefusalsNameTheCredentialMeant(t *testing.T) {
	t.Parallel()
	ts, issuer := factServer(t, testdb.MigratedURL(t, "sqlite"), nil)
	body := map[string]any{"release_id": "r-cred", "app": "checkout", "environment": "prod", "cluster": "prod-eu",
		"repository": "acme/checkout", "image": "registry.example/shop/checkout:v1"}
	for _, c := range []struct {
		name, token string
		want        []string
	}{
		{"no token", "", []string{"neither the api_token nor", "Bearer <api_token>"}},
		{"a mistyped api_token", "api-tokne", []string{"neither the api_token nor", "Bearer <api_token>"}},
		{"a workflow token for another audience", issuer.Token(t, nil, oidctest.WithAudience("https://elsewhere")),
			[]string{"OIDC token refused", "request the token for audience"}},
	} {
		var e apiError
		if code := ts.post(t, "/api/v1/releases", c.token, body, &e); code != http.StatusUnauthorized {
			t.Errorf("%s: %d %s, want 401", c.name, code, e.Error)
		}
		for _, w := range c.want {
			if !strings.Contains(e.Error, w) {
				t.Errorf("%s: answer %q does not say %q", c.name, e.Error, w)
			}
		}
		if strings.Contains(e.Error, "OIDC token refused") != strings.HasPrefix(c.name, "a workflow") {
			t.Errorf("%s: answer %q", c.name, e.Error)
		}
	}
}
