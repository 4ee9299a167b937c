package app

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// A Healthy fact that arrives after a Degraded one observed later: the
// answer says healthy_at was recorded (not a plain "ignored"), the release
// stays degraded with healthy_at set, its image is eligible, and the same
// fact again, in a batch, is a duplicate.
func TestLateHealthyFactRecordsHealthyAt(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts, _ := factServer(t, dbURL, nil)
		openRelease(t, ts, "r1", imageV1)
		now := time.Now().UTC()
		factAt := func(phase string, ago time.Duration) map[string]any {
			f := clusterFact(phase, 1, "r1", imageV1)
			f["observed_at"] = now.Add(-ago).Format(time.RFC3339Nano)
			return f
		}
		for _, f := range []map[string]any{factAt("Progressing", 3*time.Minute), factAt("Degraded", time.Minute)} {
			if code := ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", f, nil); code != http.StatusOK {
				t.Fatalf("fact %s: status %d", f["phase"], code)
			}
		}
		late := factAt("Healthy", 2*time.Minute)
		var res struct{ Outcome, Reason, State string }
		if code := ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", late, &res); code != http.StatusOK ||
			res.Outcome != "applied" || res.State != "degraded" || !strings.Contains(res.Reason, "healthy_at set to") {
			t.Fatalf("late Healthy: status %d %+v, want applied, degraded, a reason saying healthy_at was set", code, res)
		}
		var rec map[string]any
		ts.api(t, "/api/v1/releases/r1", &rec)
		if rec["state"] != "degraded" || rec["healthy_at"] == nil {
			t.Errorf("r1 = state %v healthy_at %v, want degraded with healthy_at", rec["state"], rec["healthy_at"])
		}
		q := url.Values{"app": {"checkout"}, "environment": {"prod"}, "cluster": {"prod-eu"}, "image": {imageV1}}
		var el struct {
			Eligible bool
			Reason   string
		}
		if code := ts.api(t, "/api/v1/eligibility?"+q.Encode(), &el); code != 200 || !el.Eligible {
			t.Errorf("eligibility of r1's image: %d %+v, want eligible", code, el)
		}
		var batch struct {
			Results []struct{ Outcome, State string }
		}
		if code := ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", map[string]any{"facts": []any{late}}, &batch); code != http.StatusOK ||
			len(batch.Results) != 1 || batch.Results[0].Outcome != "duplicate" || batch.Results[0].State != "degraded" {
			t.Errorf("the late Healthy again: status %d %+v, want one duplicate, degraded", code, batch)
		}
	})
}
