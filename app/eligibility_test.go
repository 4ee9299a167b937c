package app

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/repoconfig"
)

func TestEligibilityAPI(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServerWith(t, dbURL, Options{}, func(c *configT) { c.Clusters = tokensOf(map[string]string{"prod-eu": "tok-eu"}) })
		openRelease(t, ts, "r1", imageV1)
		for _, phase := range []string{"Progressing", "Healthy"} {
			ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", clusterFact(phase, 1, "r1", imageV1), nil)
		}
		openRelease(t, ts, "r2", imageV2)
		ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", clusterFact("Progressing", 2, "r2", imageV2), nil)

		type answer struct {
			Eligible bool
			Reason   string
			Evidence *struct {
				ReleaseID string `json:"release_id"`
			}
		}
		ask := func(image, cluster string) answer {
			var a answer
			q := url.Values{"app": {"checkout"}, "environment": {"prod"}, "cluster": {cluster}, "image": {image}}
			if code := ts.api(t, "/api/v1/eligibility?"+q.Encode(), &a); code != 200 {
				t.Fatalf("eligibility: status %d", code)
			}
			return a
		}
		if a := ask(imageV1, "prod-eu"); !a.Eligible || a.Evidence == nil || a.Evidence.ReleaseID != "r1" {
			t.Errorf("v1 was healthy as r1: %+v, want eligible with r1 as evidence", a)
		}
		if a := ask(imageV2, "prod-eu"); a.Eligible || a.Reason == "" {
			t.Errorf("v2 never reached healthy: %+v, want not eligible with a reason", a)
		}
		if a := ask(imageV1, "prod-us"); a.Eligible {
			t.Errorf("v1 in another cluster: %+v, want not eligible", a)
		}
		var e apiError
		if code := ts.api(t, "/api/v1/eligibility?app=checkout&environment=prod&cluster=prod-eu", &e); code != 400 || e.Field != "image" {
			t.Errorf("no image: %d %+v, want 400 naming image", code, e)
		}
	})
}

// Releases whose pull request is not merged (opened) take no place in the
// eligibility window, and the answer does not depend on how many there
// are: with more of them than eligibility.ReadAhead, the newest records of
// the target no longer reached back to the window's fifth release that
// ran, and an image healthy there was called not eligible.
func TestEligibilityAPIIgnoresManyOpenedReleases(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServerWith(t, dbURL, Options{}, func(c *configT) { c.Clusters = tokensOf(map[string]string{"prod-eu": "tok-eu"}) })
		image := func(i int) string { return fmt.Sprintf("registry.example/shop/checkout@sha256:%064x", i) }
		// r01 healthy, then four more releases that ran: r01 is the fifth
		// newest that ran, the last one the default window holds.
		openRelease(t, ts, "r01", image(1))
		for _, phase := range []string{"Progressing", "Healthy"} {
			ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", clusterFact(phase, 1, "r01", image(1)), nil)
		}
		for i := 2; i <= 5; i++ {
			id := fmt.Sprintf("r%02d", i)
			openRelease(t, ts, id, image(i))
			ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", clusterFact("Progressing", i, id, image(i)), nil)
		}
		ask := func() (a struct {
			Eligible bool
			Reason   string
		}) {
			q := url.Values{"app": {"checkout"}, "environment": {"prod"}, "cluster": {"prod-eu"}, "image": {image(1)}}
			if code := ts.api(t, "/api/v1/eligibility?"+q.Encode(), &a); code != 200 {
				t.Fatalf("eligibility: status %d", code)
			}
			return a
		}
		if a := ask(); !a.Eligible {
			t.Fatalf("before any opened release: %+v, want eligible (the fifth newest release that ran)", a)
		}
		for i := 6; i <= 6+eligibility.ReadAhead; i++ { // ReadAhead+1 releases never merged
			openRelease(t, ts, fmt.Sprintf("r%02d", i), image(i))
		}
		if a := ask(); !a.Eligible {
			t.Errorf("after %d opened releases: %+v, want still eligible: opened releases take no place in the window",
				eligibility.ReadAhead+1, a)
		}
	})
}

// Without ?window= the API answers with the window of the app's repository
// (its eligibility.window as last read, like the pages, the Roll back
// button and the gates), not the default 5: an image only the default
// window reaches was called eligible though the repository's window of 2
// no longer holds it. ?window= still overrides.
func TestEligibilityAPIUsesTheRepositoryWindow(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServerWith(t, dbURL, Options{}, func(c *configT) { c.Clusters = tokensOf(map[string]string{"prod-eu": "tok-eu"}) })
		image := func(i int) string { return fmt.Sprintf("registry.example/shop/checkout@sha256:%064x", i) }
		openRelease(t, ts, "r1", image(1))
		for _, phase := range []string{"Progressing", "Healthy"} {
			ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", clusterFact(phase, 1, "r1", image(1)), nil)
		}
		for i := 2; i <= 3; i++ {
			id := fmt.Sprintf("r%d", i)
			openRelease(t, ts, id, image(i))
			ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", clusterFact("Progressing", i, id, image(i)), nil)
		}
		ask := func(window string) (a struct {
			Eligible bool
			Reason   string
		}) {
			q := url.Values{"app": {"checkout"}, "environment": {"prod"}, "cluster": {"prod-eu"}, "image": {image(1)}}
			if window != "" {
				q.Set("window", window)
			}
			if code := ts.api(t, "/api/v1/eligibility?"+q.Encode(), &a); code != 200 {
				t.Fatalf("eligibility: status %d", code)
			}
			return a
		}
		if a := ask(""); !a.Eligible {
			t.Fatalf("no config kept: %+v, want eligible in the default window of 5", a)
		}
		cfg := &repoconfig.Config{}
		cfg.Eligibility.Window = 2
		ts.repoConfigs.Put("acme/checkout", cfg, time.Now())
		if a := ask(""); a.Eligible || a.Reason == "" {
			t.Errorf("acme/checkout's window is 2: %+v, want r1 (third newest that ran) not eligible", a)
		}
		if a := ask("5"); !a.Eligible {
			t.Errorf("?window=5: %+v, want eligible: the query overrides the repository's window", a)
		}
		ts.repoConfigs.Put("acme/other", &repoconfig.Config{Eligibility: repoconfig.Eligibility{Window: 100}}, time.Now())
		if a := ask(""); a.Eligible {
			t.Errorf("another repository's window: %+v, want acme/checkout's window of 2 still", a)
		}
	})
}

// An image that ran healthy in another cluster or environment of the app is
// not eligible here (eligibility is per app, environment and cluster), and
// the answer says where it was healthy, citing that record: the package
// explains that "no" (eligibility.Check), but the API handed it only the
// records of the asked target, so it answered that no release is recorded.
func TestEligibilityAPINamesWhereTheImageWasHealthy(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServerWith(t, dbURL, Options{}, func(c *configT) { c.Clusters = tokensOf(map[string]string{"prod-eu": "tok-eu"}) })
		openRelease(t, ts, "r1", imageV1)
		for _, phase := range []string{"Progressing", "Healthy"} {
			ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", clusterFact(phase, 1, "r1", imageV1), nil)
		}
		type answer struct {
			Eligible bool
			Reason   string
			Evidence *eligibility.Evidence
		}
		for _, c := range []struct{ env, cluster string }{{"prod", "prod-us"}, {"staging", "prod-eu"}} {
			var a answer
			q := url.Values{"app": {"checkout"}, "environment": {c.env}, "cluster": {c.cluster}, "image": {imageV1}}
			if code := ts.api(t, "/api/v1/eligibility?"+q.Encode(), &a); code != 200 {
				t.Fatalf("eligibility: status %d", code)
			}
			want := fmt.Sprintf("%s was healthy in prod/prod-eu (release r1), not in %s/%s: eligibility is per app, environment and cluster",
				imageV1, c.env, c.cluster)
			if a.Eligible || a.Reason != want {
				t.Errorf("%s/%s: eligible %v, reason %q; want not eligible, %q", c.env, c.cluster, a.Eligible, a.Reason, want)
			}
			if a.Evidence == nil || a.Evidence.ReleaseID != "r1" || a.Evidence.Position != 0 || a.Evidence.HealthyAt == nil {
				t.Errorf("%s/%s: evidence %+v, want r1 (healthy, position 0: another target)", c.env, c.cluster, a.Evidence)
			}
		}
	})
}

// Every missing parameter is a 400, and the one named is the first missing
// in the documented order (app, environment, cluster, image), the same on
// every call: the handler ranged over a map, so it named any of them.
func TestEligibilityAPINamesTheFirstMissingParameter(t *testing.T) {
	t.Parallel()
	ts := startServerWith(t, testdb.MigratedURL(t, "sqlite"), Options{}, nil)
	for _, c := range []struct{ query, field string }{
		{"", "app"},
		{"app=checkout", "environment"},
		{"app=checkout&environment=prod", "cluster"},
		{"app=checkout&environment=prod&cluster=prod-eu", "image"},
	} {
		for range 20 {
			var e apiError
			code := ts.api(t, "/api/v1/eligibility?"+c.query, &e)
			if code != 400 || e.Field != c.field || e.Error != c.field+" is required" {
				t.Fatalf("?%s: %d %+v, want 400 naming %s", c.query, code, e, c.field)
			}
		}
	}
}

// A malformed query is a 400 naming the parameter, as DESIGN.md asks of
// every bad input: an image pinned by something that is not a digest, or a
// parameter of blanks, was answered 200 "not eligible", the problem only in
// the reason, as if the records had been consulted.
func TestEligibilityAPIRefusesAMalformedQuery(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServerWith(t, dbURL, Options{}, func(c *configT) { c.Clusters = tokensOf(map[string]string{"prod-eu": "tok-eu"}) })
		openRelease(t, ts, "r1", imageV1)
		for _, c := range []struct {
			name        string
			q           url.Values
			field, want string
		}{
			{"an image pinned by a short digest",
				url.Values{"app": {"checkout"}, "environment": {"prod"}, "cluster": {"prod-eu"}, "image": {"registry.example/shop/checkout@sha256:abc"}},
				"image", `image: digest "sha256:abc" is not "sha256:<64 hex>" or "sha512:<128 hex>"`},
			{"a cluster of blanks",
				url.Values{"app": {"checkout"}, "environment": {"prod"}, "cluster": {"  "}, "image": {imageV1}},
				"cluster", "cluster is required"},
		} {
			var e apiError
			if code := ts.api(t, "/api/v1/eligibility?"+c.q.Encode(), &e); code != 400 || e.Field != c.field || e.Error != c.want {
				t.Errorf("%s: %d %+v, want 400 naming %s: %q", c.name, code, e, c.field, c.want)
			}
		}
	})
}
