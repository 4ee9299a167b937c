package rolloutflow

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	serverconfig "github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/rollout"
	"github.com/ripcord/ripcord/rollout/health"
)

// The executor's gate reads the repository config's prometheus_url through
// the outbound client, under the server's outbound.allow; the server's own
// rollout.prometheus_url, which stands in when the repository names none,
// stays reachable whatever the list says.
func TestGateReadingKeepsToOutboundAllow(t *testing.T) {
	t.Parallel()
	prometheus := func() (*httptest.Server, *atomic.Int64) {
		var n atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			n.Add(1)
			_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"scalar","result":[1764450000,"5"]}}`))
		}))
		t.Cleanup(srv.Close)
		return srv, &n
	}
	repoProm, repoHits := prometheus()
	serverProm, serverHits := prometheus()
	u, _ := url.Parse(serverProm.URL)
	cfg := serverconfig.Defaults()
	cfg.Outbound.Allow = []string{"10.0.0.0/8"}
	cfg.Rollout.PrometheusURL = "http://localhost:" + u.Port()
	x := newExecutor(pipeline.Deps{Config: cfg})

	read := func(prometheusURL string) health.Reading {
		snap := Snapshot{Plan: &rollout.Plan{Health: &rollout.Health{
			Metrics: []rollout.Metric{{Name: "rps", Query: "sum(x)", Min: new(1.0)}},
		}}, Settings: Settings{PrometheusURL: prometheusURL}}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return x.health.read(ctx, snap, Scope{}, time.Now())
	}
	got := read(repoProm.URL)
	const want = "of prometheus_url is not in the server's outbound.allow: ripcord does not call it"
	if got.Green || !strings.Contains(strings.Join(got.Reasons, "\n"), want) || repoHits.Load() != 0 {
		t.Errorf("the repository's Prometheus outside outbound.allow: green %v %q after %d requests; want red …%s… and none",
			got.Green, got.Reasons, repoHits.Load(), want)
	}
	if got := read(cfg.Rollout.PrometheusURL); !got.Green || serverHits.Load() != 1 {
		t.Errorf("the server's own Prometheus: green %v %q after %d requests; want green after 1", got.Green, got.Reasons, serverHits.Load())
	}
}
