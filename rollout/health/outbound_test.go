package health

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ripcord/ripcord/internal/outbound"
	"github.com/ripcord/ripcord/rollout"
)

// The URLs below are the repository's own .github/ripcord.yml: a reading
// must not become the repository's way to the cloud metadata service. The
// reader is given the outbound client explicitly, so that the old code
// under this test refuses the address too (no request leaves loopback) and
// only the reason tells them apart.
func TestReadingRefusesTheMetadataService(t *testing.T) {
	r := Reader{HTTP: outbound.Client(nil), PrometheusURL: "http://169.254.169.254/", AlertmanagerURL: "http://169.254.169.254",
		Health: &rollout.Health{
			Metrics: []rollout.Metric{{Name: "rps", Query: "sum(x)", Min: ptr(1)}},
			Alerts:  &rollout.Alerts{BlockOn: []string{"severity=critical"}},
			Probes:  []rollout.Probe{{URL: "http://{host}/latest/meta-data/", From: rollout.FromServer}},
		}}
	got := r.Read(context.Background(), Scope{Hosts: []string{"169.254.169.254"}}, readAt)
	reasons := strings.Join(got.Reasons, "\n")
	for _, want := range []string{
		"metric rps: query Prometheus: the address 169.254.169.254 of prometheus_url is link-local: ripcord does not call it",
		"alerts: list Alertmanager alerts: the address 169.254.169.254 of alertmanager_url is link-local: ripcord does not call it",
		"probe http://169.254.169.254/latest/meta-data/: the address 169.254.169.254 of the probe's url is link-local: ripcord does not call it",
	} {
		if !strings.Contains(reasons, want) {
			t.Errorf("reasons:\n%s\nwant …%s…", reasons, want)
		}
	}
	if got.Green {
		t.Error("a reading refused is green")
	}
}

// A prometheus_url ending in "#" made the appended API path a fragment, so
// the query went to whatever path the URL named.
func TestPrometheusURLFragmentKeepsTheAPIPath(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		_, _ = w.Write([]byte(vector("5")))
	}))
	defer srv.Close()
	r := Reader{HTTP: outbound.Client(nil), PrometheusURL: srv.URL + "/admin/secrets#",
		Health: &rollout.Health{Metrics: []rollout.Metric{{Name: "rps", Query: "sum(x)", Min: ptr(1)}}}}
	r.Read(context.Background(), usA, readAt)
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 1 || paths[0] != "/admin/secrets/api/v1/query" {
		t.Errorf("requested paths %q, want [/admin/secrets/api/v1/query]", paths)
	}
}

// A redirect is an answer, and the reason says it was not followed.
func TestReadingFollowsNoRedirect(t *testing.T) {
	var elsewhere atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/elsewhere") {
			elsewhere.Add(1)
			_, _ = w.Write([]byte(vector("5")))
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}))
	defer srv.Close()
	r := Reader{HTTP: outbound.Client(nil), PrometheusURL: srv.URL, AlertmanagerURL: srv.URL,
		Health: &rollout.Health{
			Metrics: []rollout.Metric{{Name: "rps", Query: "sum(x)", Min: ptr(1)}},
			Alerts:  &rollout.Alerts{BlockOn: []string{"severity=critical"}},
			Probes:  []rollout.Probe{{URL: "http://{host}/healthz", From: rollout.FromServer}},
		}}
	got := r.Read(context.Background(), Scope{Hosts: []string{strings.TrimPrefix(srv.URL, "http://")}}, readAt)
	reasons := strings.Join(got.Reasons, "\n")
	const why = "redirected to /elsewhere; ripcord follows no redirects for repository-chosen URLs"
	if n := strings.Count(reasons, why); n != 3 {
		t.Errorf("reasons:\n%s\nwant the metric, the alerts and the probe to say …%s…", reasons, why)
	}
	if elsewhere.Load() != 0 {
		t.Errorf("the redirects were followed %d times", elsewhere.Load())
	}
}
