package app

import (
	"net/url"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

func TestEligibilityAPI(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ts := startServerWith(t, dbURL, Options{}, func(c *configT) { c.Clusters = map[string]string{"prod-eu": "tok-eu"} })
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
