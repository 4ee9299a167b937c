package health

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/rollout"
)

var readAt = time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)

func ptr(f float64) *float64 { return &f }

// prometheus serves /api/v1/query the way Prometheus documents it: answers
// are looked up by the exact query text, and a query asked at another time
// than readAt is a test failure (readings must be replayable).
func prometheus(t *testing.T, answers map[string]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		if got := r.URL.Query().Get("time"); got != readAt.Format(time.RFC3339Nano) {
			t.Errorf("query time %q, want %s", got, readAt.Format(time.RFC3339Nano))
		}
		answer, ok := answers[r.URL.Query().Get("query")]
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":"unexpected query %q"}`, r.URL.Query().Get("query"))
			return
		}
		if strings.Contains(answer, `"status":"error"`) {
			w.WriteHeader(http.StatusUnprocessableEntity)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func vector(values ...string) string {
	var series []string
	for i, v := range values {
		series = append(series, fmt.Sprintf(`{"metric":{"az":"us-1a","instance":"i%d"},"value":[%d.5,%q]}`, i, readAt.Unix(), v))
	}
	return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(series, ",") + `]}}`
}

// alertmanager serves /api/v2/alerts with the given alerts (Alertmanager's
// gettableAlert JSON), refusing a request without the filters the gate
// relies on.
func alertmanager(t *testing.T, alerts string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v2/alerts" {
			http.NotFound(w, r)
			return
		}
		want := url.Values{"active": {"true"}, "silenced": {"false"}, "inhibited": {"false"}}
		for k, v := range want {
			if r.URL.Query().Get(k) != v[0] {
				t.Errorf("alerts asked with %s=%q, want %q", k, r.URL.Query().Get(k), v[0])
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, alerts)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func alert(labels map[string]string) string {
	l, _ := json.Marshal(labels)
	return fmt.Sprintf(`{"annotations":{"summary":"x"},"endsAt":"2026-11-29T22:00:00.000Z","fingerprint":"f%d","receivers":[{"name":"pager"}],`+
		`"startsAt":"2026-11-29T20:55:00.000Z","updatedAt":"2026-11-29T20:59:00.000Z","generatorURL":"http://prom/graph",`+
		`"status":{"inhibitedBy":[],"silencedBy":[],"state":"active"},"labels":%s}`, len(labels), l)
}

var usA = Scope{Application: "myapp", Environment: "prod", Region: "us-1", AZ: "us-1a"}

const errorRate = `sum(rate(http_requests_total{app="{application}",env="{environment}",region="{region}",az="{az}",code=~"5.."}[5m]))`

func TestReadMetrics(t *testing.T) {
	substituted := `sum(rate(http_requests_total{app="myapp",env="prod",region="us-1",az="us-1a",code=~"5.."}[5m]))`
	tests := []struct {
		name     string
		answer   string
		min, max *float64
		green    bool
		reason   string
	}{
		{"under max is green", vector("0.001"), nil, ptr(0.01), true, ""},
		{"over max is red with the seed's message", vector("0.2"), nil, ptr(0.01), false, "metric error-rate (us-1/us-1a): value 0.2 above max 0.01"},
		{"the worst series is judged", vector("0.001", "0.5"), nil, ptr(0.01), false, "value 0.5 above max 0.01"},
		{"under min is red", vector("3"), ptr(10), nil, false, "value 3 below min 10"},
		{"an empty result is no data, and no data is red", vector(), nil, ptr(0.01), false, "metric error-rate (us-1/us-1a): no data"},
		{"NaN from a ratio over no traffic is no data", vector("NaN"), nil, ptr(0.01), false, "no data"},
		{"+Inf is above any max", vector("+Inf"), nil, ptr(0.01), false, "value +Inf above max"},
		{"a scalar result is read", `{"status":"success","data":{"resultType":"scalar","result":[1764450000,"0"]}}`, nil, ptr(0.01), true, ""},
		{"a range vector is refused", `{"status":"success","data":{"resultType":"matrix","result":[]}}`, nil, ptr(0.01), false, "returns a matrix"},
		{"a query error is red with Prometheus's reason", `{"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected \"}\""}`, nil, ptr(0.01), false, "query failed: bad_data: 1:5: parse error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prom := prometheus(t, map[string]string{substituted: tt.answer})
			r := Reader{PrometheusURL: prom.URL + "/", Health: &rollout.Health{
				Metrics: []rollout.Metric{{Name: "error-rate", Query: errorRate, Max: tt.max, Min: tt.min}},
			}}
			got := r.Read(context.Background(), usA, readAt)
			if got.Green != tt.green || !strings.Contains(strings.Join(got.Reasons, "\n"), tt.reason) {
				t.Errorf("green %v reasons %q, want green %v …%s…", got.Green, got.Reasons, tt.green, tt.reason)
			}
			if len(got.Metrics) != 1 || got.Metrics[0].Query != substituted || !got.At.Equal(readAt) {
				t.Errorf("metric results %+v", got.Metrics)
			}
		})
	}
}

func TestReadMetricWithoutPrometheusIsRed(t *testing.T) {
	r := Reader{Health: &rollout.Health{Metrics: []rollout.Metric{{Name: "rps", Query: "sum(x)", Min: ptr(1)}}}}
	got := r.Read(context.Background(), usA, readAt)
	if got.Green || !strings.Contains(strings.Join(got.Reasons, ""), "no prometheus_url is set") {
		t.Errorf("got %+v", got)
	}
}

func TestReadAlerts(t *testing.T) {
	blockOn := []string{"severity=critical", "team=payments, severity in (page, critical)"}
	tests := []struct {
		name   string
		alerts []map[string]string
		green  bool
		reason string
	}{
		{"no alerts", nil, true, ""},
		{"a critical alert for this application, region and az", []map[string]string{
			{"alertname": "HighErrors", "severity": "critical", "application": "myapp", "region": "us-1", "az": "us-1a"},
		}, false, `alert HighErrors (us-1/us-1a) firing: matches block_on "severity=critical"`},
		{"a warning does not block", []map[string]string{
			{"alertname": "Slow", "severity": "warning", "app": "myapp"},
		}, true, ""},
		{"an alert without region or az labels concerns every stage", []map[string]string{
			{"alertname": "DBDown", "severity": "critical"},
		}, false, "alert DBDown (us-1/us-1a) firing"},
		{"the app label stands for application", []map[string]string{
			{"alertname": "Other", "severity": "critical", "app": "billing"},
		}, true, ""},
		{"an alert for another region does not block", []map[string]string{
			{"alertname": "HighErrors", "severity": "critical", "application": "myapp", "region": "eu-1"},
		}, true, ""},
		{"an alert for another az of the region does not block", []map[string]string{
			{"alertname": "HighErrors", "severity": "critical", "region": "us-1", "az": "us-1b"},
		}, true, ""},
		{"every condition of an entry must hold", []map[string]string{
			{"alertname": "Paging", "severity": "page", "team": "search"},
		}, true, ""},
		{"the second entry blocks when all its conditions hold", []map[string]string{
			{"alertname": "Paging", "severity": "page", "team": "payments"},
		}, false, `matches block_on "team=payments, severity in (page, critical)"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var items []string
			for _, a := range tt.alerts {
				items = append(items, alert(a))
			}
			am := alertmanager(t, "["+strings.Join(items, ",")+"]")
			r := Reader{AlertmanagerURL: am.URL, Health: &rollout.Health{Alerts: &rollout.Alerts{BlockOn: blockOn}}}
			got := r.Read(context.Background(), usA, readAt)
			if got.Green != tt.green || !strings.Contains(strings.Join(got.Reasons, "\n"), tt.reason) {
				t.Errorf("green %v reasons %q, want green %v …%s…", got.Green, got.Reasons, tt.green, tt.reason)
			}
			if !tt.green && (len(got.Alerts) != 1 || got.Alerts[0].StartsAt.IsZero() || got.Alerts[0].Labels["alertname"] == "") {
				t.Errorf("alert results %+v", got.Alerts)
			}
		})
	}
}

func TestReadAlertsFailureIsRed(t *testing.T) {
	am := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream unavailable", http.StatusServiceUnavailable)
	}))
	defer am.Close()
	for name, u := range map[string]string{"an unavailable Alertmanager": am.URL, "no alertmanager_url": ""} {
		t.Run(name, func(t *testing.T) {
			r := Reader{AlertmanagerURL: u, Health: &rollout.Health{Alerts: &rollout.Alerts{BlockOn: []string{"severity=critical"}}}}
			got := r.Read(context.Background(), usA, readAt)
			if got.Green || len(got.Reasons) != 1 || !strings.HasPrefix(got.Reasons[0], "alerts: ") {
				t.Errorf("got %+v", got)
			}
		})
	}
}

func TestReadServerProbes(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{}
	target := func(status int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[r.Host] = r.URL.Path
			mu.Unlock()
			if status == http.StatusFound {
				http.Redirect(w, r, "http://elsewhere.invalid/", status)
				return
			}
			w.WriteHeader(status)
		}))
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	healthy, failing, redirecting := target(200), target(503), target(http.StatusFound)
	closed := httptest.NewServer(http.NotFoundHandler())
	gone := strings.TrimPrefix(closed.URL, "http://")
	closed.Close()

	r := Reader{Timeout: 5 * time.Second, Health: &rollout.Health{Probes: []rollout.Probe{
		{URL: "http://{host}/healthz", ExpectStatus: 200, From: rollout.FromServer},
		{URL: "http://{host}/runner-only", ExpectStatus: 200, From: rollout.FromRunners},
	}}}
	got := r.Read(context.Background(), Scope{Hosts: []string{healthy, failing, redirecting, gone}}, readAt)
	if got.Green || len(got.Probes) != 4 {
		t.Fatalf("got %+v", got)
	}
	want := []struct {
		green  bool
		reason string
	}{
		{true, ""},
		{false, "status 503, expected 200"},
		{false, "status 302, expected 200"}, // a redirect is not followed off the target
		{false, "probe http://" + gone + "/healthz: "},
	}
	for i, w := range want {
		p := got.Probes[i]
		if p.Green != w.green || !strings.Contains(p.Reason, w.reason) || p.From != "server" {
			t.Errorf("probe %d: %+v, want green %v …%s…", i, p, w.green, w.reason)
		}
	}
	for host, path := range seen {
		if path != "/healthz" {
			t.Errorf("%s was sent %s: runner probes are not the server's", host, path)
		}
	}
}

func TestProbesOnlyLeavesMetricsAndAlertsToTheStageGate(t *testing.T) {
	// Neither URL is set: reading metrics or alerts would be red.
	full := Reader{Health: &rollout.Health{
		Metrics: []rollout.Metric{{Name: "error-rate", Query: "x", Max: ptr(1)}},
		Alerts:  &rollout.Alerts{BlockOn: []string{"severity=critical"}},
	}}
	if got := full.Read(context.Background(), usA, readAt); got.Green {
		t.Fatalf("the stage gate must read metrics and alerts: %+v", got)
	}
	if got := full.ProbesOnly().Read(context.Background(), usA, readAt); !got.Green {
		t.Errorf("a batch gate read metrics or alerts: %+v", got)
	}
	if full.Health.Metrics == nil || full.Health.Alerts == nil {
		t.Error("ProbesOnly changed the stage's health")
	}
}
