package ghclient

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/prometheus/client_golang/prometheus"
)

// MetricsConfig says where Metrics reports.
type MetricsConfig struct {
	// Registerer receives ripcord_github_requests_total and
	// ripcord_github_request_duration_seconds; nil registers nothing.
	Registerer prometheus.Registerer
	// Counter, if set, also counts every call in process.
	Counter *Counter
	Clock   Clock
}

// Metrics counts every request that reaches the next transport, by route
// template, method and status ("error" when no response came back), and
// observes its latency. Placed innermost, it counts what GitHub actually
// sees: each retry, and a 304 as a 304.
func Metrics(cfg MetricsConfig) (githubapp.ClientMiddleware, error) {
	clock := clockOr(cfg.Clock)
	var requests *prometheus.CounterVec
	var latency *prometheus.HistogramVec
	if cfg.Registerer != nil {
		var err error
		requests, err = registerOrReuse(cfg.Registerer, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ripcord_github_requests_total",
			Help: "Requests that reached the GitHub API, by route template, method and status.",
		}, []string{"route", "method", "status"}))
		if err != nil {
			return nil, err
		}
		latency, err = registerOrReuse(cfg.Registerer, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ripcord_github_request_duration_seconds",
			Help:    "Latency of requests to the GitHub API, by route template and method.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "method"}))
		if err != nil {
			return nil, err
		}
	}
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			start := clock.Now()
			resp, err := next.RoundTrip(req)
			route := Route(req.URL.Path)
			status, label := 0, "error"
			if resp != nil {
				status = resp.StatusCode
				label = strconv.Itoa(status)
			}
			if requests != nil {
				requests.WithLabelValues(route, req.Method, label).Inc()
				latency.WithLabelValues(route, req.Method).Observe(clock.Now().Sub(start).Seconds())
			}
			if cfg.Counter != nil {
				cfg.Counter.Add(Call{Route: route, Method: req.Method, Status: status})
			}
			return resp, err
		})
	}, nil
}

// registerOrReuse registers c, or returns the collector already registered
// under the same description, so that building a second client creator
// against one registry (a restart in tests, two servers in one process)
// shares the series instead of failing.
func registerOrReuse[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("register github client metrics: %w", err)
}
