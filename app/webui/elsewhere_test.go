package webui

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// A release that is no rollback target in its own environment says where
// else its image ran healthy, as GET /api/v1/eligibility says it: the page
// read only its own target's records and answered that the image was not
// among the newest releases there, which the API contradicted. Only
// records the person can read are cited, and the verdict stays per app,
// environment and cluster.
func TestPagesSayWhereElseAReleasesImageRanHealthy(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		f := newFixture(t, dbURL)
		for _, r := range []release{
			// v7 failed in production, then five releases ran there: v7 is
			// past production's window and never was healthy in it.
			{"shop-p7", "shop", "production", "eu-1", "acme/shop", "ghcr.io/acme/shop:v7", records.TaskFailed, t0},
			{"shop-s7", "shop", "staging", "eu-1", "acme/shop", "ghcr.io/acme/shop:v7", records.TaskSuccess, t0.Add(5 * time.Minute)},
			// v8 failed in production too, and was healthy only in a
			// repository alice cannot read.
			{"shop-p8", "shop", "production", "eu-1", "acme/shop", "ghcr.io/acme/shop:v8", records.TaskFailed, t0.Add(10 * time.Minute)},
			{"shop-x8", "shop", "lab", "eu-1", "acme/secret", "ghcr.io/acme/shop:v8", records.TaskSuccess, t0.Add(15 * time.Minute)},
		} {
			f.report(t, r)
		}
		for i := range 5 {
			f.report(t, release{fmt.Sprintf("shop-n%d", i), "shop", "production", "eu-1", "acme/shop",
				fmt.Sprintf("ghcr.io/acme/shop:v%d", 10+i), records.TaskSuccess, t0.Add(time.Duration(20+i) * time.Minute)})
		}
		app := appWith("https://github.example/")
		_, mux := newTestHandler(f, publicURL, "https://api.github.example/", func() pipeline.AppIdentity { return app }, newFakeGitHub(), now)
		alice := sessionCookieFor(t, app, "alice", "tok-alice")

		healthyInStaging := "ghcr.io/acme/shop:v7 was healthy in staging/eu-1 (release shop-s7), not in production/eu-1"
		for _, path := range []string{"/", "/releases/shop-p7"} {
			w := get(t, mux, path, alice)
			b := body(w)
			if w.Code != http.StatusOK {
				t.Fatalf("GET %s = %d\n%s", path, w.Code, b)
			}
			if !strings.Contains(b, healthyInStaging) {
				t.Errorf("GET %s does not say %q", path, healthyInStaging)
			}
			if strings.Contains(b, "ripcord rollback --app shop --environment production --cluster eu-1 --to shop-p7") {
				t.Errorf("GET %s offers shop-p7 as a rollback target, though v7 never was healthy in production", path)
			}
			if strings.Contains(b, "shop-x8") || strings.Contains(b, "lab/eu-1") {
				t.Errorf("GET %s cites a record of acme/secret, which alice cannot read", path)
			}
		}
	})
}
