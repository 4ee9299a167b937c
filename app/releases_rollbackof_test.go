package app

import (
	"net/http"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// rollback_of must name a release of the rollback's own app, environment
// and cluster: a rollback of another target could never replace it, yet
// eligibility and the pages would read it as if it had. A release ripcord
// does not know is accepted, but its rollback turning healthy must not
// send service.rolledback, which would claim a rollback nothing closed.
func TestPostReleaseRollbackOf(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		_, sinkURL := newSink(t)
		ts := startServerWith(t, dbURL, Options{}, func(c *configT) {
			c.Clusters = tokensOf(map[string]string{"prod-eu": "tok-eu"})
			c.CDEventSinks = []string{sinkURL}
		})
		rollback := func(id, of string, change map[string]any) map[string]any {
			b := map[string]any{"release_id": id, "app": "checkout", "environment": "prod", "cluster": "prod-eu",
				"repository": "acme/checkout", "image": imageV1, "kind": "rollback", "rollback_of": of,
				"rollback_reason": "v2 fails checkout"}
			for k, v := range change {
				b[k] = v
			}
			return b
		}
		rolledBackEvents := func(release string) int {
			return countRows(t, ts.Server, `SELECT count(*) FROM river_job WHERE kind = 'cdevent' AND CAST(args AS TEXT) LIKE $1`,
				"%cdevent/dev.cdevents.service.rolledback%/"+release+"%")
		}
		fact := func(phase string, gen int, release, image string) {
			t.Helper()
			var a factAnswer
			if code := ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", clusterFact(phase, gen, release, image), &a); code != 200 || a.Outcome != "applied" {
				t.Fatalf("fact %s %s: status %d %+v", release, phase, code, a)
			}
		}

		// r-other-* are releases of other targets, each the one rollback_of names.
		for _, o := range []struct{ id, app, env, cluster, want string }{
			{"r-other-app", "billing", "prod", "prod-eu", "release r-other-app is of app/environment/cluster billing/prod/prod-eu, not checkout/prod/prod-eu"},
			{"r-other-env", "checkout", "staging", "prod-eu", "release r-other-env is of app/environment/cluster checkout/staging/prod-eu, not checkout/prod/prod-eu"},
			{"r-other-cluster", "checkout", "prod", "prod-us", "release r-other-cluster is of app/environment/cluster checkout/prod/prod-us, not checkout/prod/prod-eu"},
		} {
			body := map[string]any{"release_id": o.id, "app": o.app, "environment": o.env, "cluster": o.cluster,
				"repository": "acme/checkout", "image": imageV2}
			if code := ts.post(t, "/api/v1/releases", testToken, body, nil); code != http.StatusCreated {
				t.Fatalf("open %s: %d", o.id, code)
			}
			var e apiError
			code := ts.post(t, "/api/v1/releases", testToken, rollback("rb-"+o.id, o.id, nil), &e)
			if code != http.StatusBadRequest || e.Field != "rollback_of" || e.Error != "rollback_of: "+o.want {
				t.Errorf("rollback of %s: %d %+v, want 400 naming rollback_of: %q", o.id, code, e, o.want)
			}
			var got apiError
			if code := ts.api(t, "/api/v1/releases/rb-"+o.id, &got); code != http.StatusNotFound {
				t.Errorf("the refused rollback of %s was stored: GET answered %d", o.id, code)
			}
		}

		// A release ripcord does not know: accepted; healthy, it sends
		// service.deployed and no service.rolledback.
		if code := ts.post(t, "/api/v1/releases", testToken, rollback("rb-unknown", "r-before-ripcord", nil), nil); code != http.StatusCreated {
			t.Fatalf("rollback of an unknown release: %d, want 201", code)
		}
		fact("Healthy", 1, "rb-unknown", imageV1)
		if n := countRows(t, ts.Server, `SELECT count(*) FROM river_job WHERE kind = 'cdevent' AND CAST(args AS TEXT) LIKE $1`,
			"%cdevent/dev.cdevents.service.deployed%/rb-unknown%"); n != 1 {
			t.Errorf("%d service.deployed queued for rb-unknown, want 1", n)
		}
		if n := rolledBackEvents("rb-unknown"); n != 0 {
			t.Errorf("%d service.rolledback queued for the rollback of a release ripcord does not know, want 0", n)
		}

		// The normal case: r2 runs, its rollback turns healthy and rolls it back.
		openRelease(t, ts, "r2", imageV2)
		fact("Healthy", 2, "r2", imageV2)
		if code := ts.post(t, "/api/v1/releases", testToken, rollback("rb-r2", "r2", nil), nil); code != http.StatusCreated {
			t.Fatalf("rollback of r2: %d, want 201", code)
		}
		fact("Healthy", 3, "rb-r2", imageV1)
		var r2 map[string]any
		ts.api(t, "/api/v1/releases/r2", &r2)
		if r2["state"] != "rolled-back" || r2["rolled_back_by"] != "rb-r2" {
			t.Errorf("r2 = %v rolled back by %v, want rolled-back by rb-r2", r2["state"], r2["rolled_back_by"])
		}
		if n := rolledBackEvents("rb-r2"); n != 1 {
			t.Errorf("%d service.rolledback queued for rb-r2, want 1", n)
		}
	})
}
