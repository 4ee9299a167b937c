package app

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/internal/testdb"
)

// The sweeper must keep every record an eligibility check may read: a
// repository may widen its eligibility window up to maxEligibilityWindow,
// and an image that was healthy inside that window stays eligible however
// old its record is.
func TestSweepKeepsWhatAWideEligibilityWindowReads(t *testing.T) {
	t.Parallel()
	ts := startServerWith(t, testdb.MigratedURL(t, "sqlite"), Options{}, func(c *configT) {
		c.Clusters = tokensOf(map[string]string{"prod-eu": "tok-eu"})
		c.Retention = time.Millisecond
	})
	image := func(n int) string {
		return "registry.example/shop/checkout@sha256:" + strings.Repeat(fmt.Sprintf("%x", n), 64)
	}
	const releases = 8
	for n := 1; n <= releases; n++ {
		id := fmt.Sprintf("r%d", n)
		openRelease(t, ts, id, image(n))
		for _, phase := range []string{"Progressing", "Healthy"} {
			if code := ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", clusterFact(phase, n, id, image(n)), nil); code != 200 {
				t.Fatalf("fact %s %s: status %d", id, phase, code)
			}
		}
		time.Sleep(2 * time.Millisecond) // distinct created_at: eligibility orders by it
	}
	time.Sleep(5 * time.Millisecond) // every record is past retention
	job := &river.Job[SweepArgs]{JobRow: &rivertype.JobRow{Kind: SweepArgs{}.Kind()}}
	if err := (&sweepWorker{s: ts.Server}).Work(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	var a struct{ Eligible bool }
	q := url.Values{"app": {"checkout"}, "environment": {"prod"}, "cluster": {"prod-eu"}, "image": {image(1)}, "window": {"10"}}
	if code := ts.api(t, "/api/v1/eligibility?"+q.Encode(), &a); code != 200 || !a.Eligible {
		t.Errorf("r1, healthy and within the newest 10, after a sweep: status %d eligible %v, want eligible", code, a.Eligible)
	}
}
