package ghclient

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/migueleliasweb/go-github-mock/src/mock"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// mockClient is go-github-mock's HTTP client (it is built on go-github v64;
// only its HTTP side is used) with our v66 client on top, through mws.
func mockClient(mws []githubapp.ClientMiddleware, opts ...mock.MockBackendOption) *github.Client {
	hc := mock.NewMockedHTTPClient(opts...)
	hc.Transport = Wrap(hc.Transport, mws...)
	c := github.NewClient(hc)
	c.UserAgent = "ripcord/test (installation: 7)"
	return c
}

func stack(t *testing.T, cfg Config) []githubapp.ClientMiddleware {
	t.Helper()
	mws, err := Middlewares(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return mws
}

func TestMetrics_OneRerunIsOneWrite(t *testing.T) {
	counter := &Counter{}
	c := mockClient(stack(t, Config{Counter: counter, Clock: newFakeClock()}),
		mock.WithRequestMatchHandler(mock.PostReposActionsRunsRerunFailedJobsByOwnerByRepoByRunId,
			http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) })),
	)

	if _, err := c.Actions.RerunFailedJobsByID(context.Background(), "acme", "api", 123456789); err != nil {
		t.Fatalf("re-run: %v", err)
	}
	t.Logf("one re-run = %d write:\n%s", counter.Writes(), counter)
	if counter.Writes() != 1 || counter.Total() != 1 ||
		counter.Count("/repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs", "POST", 201) != 1 {
		t.Fatalf("counted:\n%s\nwant exactly one POST rerun-failed-jobs 201", counter)
	}
}

func TestMetrics_RerunAnswered502IsRetriedAndBothAttemptsCount(t *testing.T) {
	counter := &Counter{}
	n := 0
	c := mockClient(stack(t, Config{Counter: counter, Clock: newFakeClock()}),
		mock.WithRequestMatchHandler(mock.PostReposActionsRunsRerunFailedJobsByOwnerByRepoByRunId,
			http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				n++
				if n == 1 {
					mock.WriteError(w, http.StatusBadGateway, "Server Error")
					return
				}
				w.WriteHeader(http.StatusCreated)
			})),
	)

	if _, err := c.Actions.RerunFailedJobsByID(context.Background(), "acme", "api", 1); err != nil {
		t.Fatalf("re-run: %v", err)
	}
	route := "/repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs"
	if counter.Count(route, "POST", 502) != 1 || counter.Count(route, "POST", 201) != 1 {
		t.Fatalf("counted:\n%s\nwant one 502 and one 201", counter)
	}
}

func TestMetrics_PrometheusSeriesByRouteTemplate(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := mockClient(stack(t, Config{Registerer: reg, Clock: newFakeClock()}),
		mock.WithRequestMatch(mock.GetReposActionsRunsByOwnerByRepoByRunId, github.WorkflowRun{ID: github.Int64(1)}, github.WorkflowRun{ID: github.Int64(2)}),
	)
	for _, id := range []int64{1, 2} {
		if _, _, err := c.Actions.GetWorkflowRunByID(context.Background(), "acme", "api", id); err != nil {
			t.Fatal(err)
		}
	}

	labels := map[string]string{"route": "/repos/{owner}/{repo}/actions/runs/{run_id}", "method": "GET", "status": "200"}
	if got := counterValue(t, reg, "ripcord_github_requests_total", labels); got != 2 {
		t.Fatalf("ripcord_github_requests_total%v = %v, want 2 (two run ids, one series)", labels, got)
	}
	if got := histogramCount(t, reg, "ripcord_github_request_duration_seconds"); got != 2 {
		t.Fatalf("latency observations = %d, want 2", got)
	}
}

func TestMetrics_TransportErrorIsCountedAsError(t *testing.T) {
	reg := prometheus.NewRegistry()
	counter := &Counter{}
	m, err := Metrics(MetricsConfig{Registerer: reg, Counter: counter})
	if err != nil {
		t.Fatal(err)
	}
	broken := roundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("connection refused") })
	c := github.NewClient(&http.Client{Transport: m(broken)})
	_, _, _ = c.Repositories.Get(context.Background(), "acme", "api")

	labels := map[string]string{"route": "/repos/{owner}/{repo}", "method": "GET", "status": "error"}
	if got := counterValue(t, reg, "ripcord_github_requests_total", labels); got != 1 {
		t.Fatalf("ripcord_github_requests_total%v = %v, want 1", labels, got)
	}
	if counter.Count("/repos/{owner}/{repo}", "GET", 0) != 1 {
		t.Fatalf("counted:\n%s\nwant one GET with status 0", counter)
	}
}

func TestMetrics_SecondRegistrationSharesTheSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	for i := 0; i < 2; i++ {
		if _, err := Metrics(MetricsConfig{Registerer: reg}); err != nil {
			t.Fatalf("registration %d: %v", i+1, err)
		}
	}
}

func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	for _, m := range family(t, reg, name) {
		if labelsMatch(m, labels) {
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func histogramCount(t *testing.T, reg *prometheus.Registry, name string) uint64 {
	t.Helper()
	var n uint64
	for _, m := range family(t, reg, name) {
		n += m.GetHistogram().GetSampleCount()
	}
	return n
}

func family(t *testing.T, reg *prometheus.Registry, name string) []*dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()
		}
	}
	return nil
}

func labelsMatch(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return len(got) == len(want)
}
