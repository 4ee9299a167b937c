package health

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/url"
	"strconv"
	"time"

	"github.com/ripcord/ripcord/internal/outbound"
)

// maxAPIBody bounds what is read from Prometheus or Alertmanager: a gate
// needs a few series or alerts, not a dump.
const maxAPIBody = 8 << 20

// promResponse is the envelope of Prometheus's HTTP API
// (https://prometheus.io/docs/prometheus/latest/querying/api/).
type promResponse struct {
	Status    string `json:"status"` // success | error
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string          `json:"resultType"` // vector | scalar | matrix | string
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// promSample is [unix seconds, "value"], as the API writes values.
type promSample [2]any

type promSeries struct {
	Metric map[string]string `json:"metric"`
	Value  promSample        `json:"value"`
}

func (r Reader) metrics(ctx context.Context, s Scope, at time.Time) []MetricResult {
	var out []MetricResult
	for _, m := range r.Health.Metrics {
		res := MetricResult{Name: m.Name, Query: substitute(m.Query, s), Max: m.Max, Min: m.Min}
		label := "metric " + m.Name + s.where()
		values, err := r.query(ctx, res.Query, at)
		if err != nil {
			res.Reason = fmt.Sprintf("%s: %v", label, err)
		} else {
			res = JudgeMetric(res, values, label)
		}
		out = append(out, res)
	}
	return out
}

// JudgeMetric judges the values of a metric's series against its bounds:
// no series, or a series without a number (NaN: a ratio over no traffic),
// is no data, and no data is red.
func JudgeMetric(res MetricResult, values []float64, label string) MetricResult {
	res.Series, res.Value, res.Green, res.Reason = len(values), nil, false, ""
	noData := fmt.Sprintf("%s: no data (a gate that sees no traffic cannot call the release healthy; to accept that, add `or vector(0)` to the query)", label)
	if len(values) == 0 {
		res.Reason = noData
		return res
	}
	hi, lo := math.Inf(-1), math.Inf(1)
	for _, v := range values {
		if math.IsNaN(v) {
			res.Reason = noData
			return res
		}
		hi, lo = max(hi, v), min(lo, v)
	}
	switch {
	case res.Max != nil && hi > *res.Max:
		res.Value, res.Reason = &hi, fmt.Sprintf("%s: value %s above max %s", label, num(hi), num(*res.Max))
	case res.Min != nil && lo < *res.Min:
		res.Value, res.Reason = &lo, fmt.Sprintf("%s: value %s below min %s", label, num(lo), num(*res.Min))
	case res.Max != nil:
		res.Value, res.Green = &hi, true
	default:
		res.Value, res.Green = &lo, true
	}
	return res
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// query runs an instant query at the given time and returns the value of
// every series.
func (r Reader) query(ctx context.Context, query string, at time.Time) ([]float64, error) {
	if r.PrometheusURL == "" {
		return nil, fmt.Errorf("no prometheus_url is set, so the metric cannot be read")
	}
	q := url.Values{"query": {query}, "time": {at.UTC().Format(time.RFC3339Nano)}}
	endpoint, err := apiURL(r.PrometheusURL, "/api/v1/query", q)
	if err != nil {
		return nil, fmt.Errorf("prometheus_url: %w", err)
	}
	resp, cancel, err := r.get(ctx, r.client(), endpoint)
	if err != nil {
		return nil, fmt.Errorf("query Prometheus: %w", requestError(err, "prometheus_url"))
	}
	defer cancel()
	defer resp.Body.Close()
	if why := outbound.Redirect(resp); why != "" {
		return nil, fmt.Errorf("query Prometheus: answered %s, %s", resp.Status, why)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAPIBody+1))
	if err != nil {
		return nil, fmt.Errorf("read Prometheus's answer: %w", err)
	}
	var pr promResponse
	if len(body) > maxAPIBody || json.Unmarshal(body, &pr) != nil {
		return nil, fmt.Errorf("the answer from Prometheus is not an API response: %s",
			r.unexpected("Prometheus", resp, body, maxAPIBody+1))
	}
	if pr.Status != "success" {
		return nil, fmt.Errorf("query failed: %s: %s", pr.ErrorType, pr.Error)
	}
	return promValues(pr)
}

func promValues(pr promResponse) ([]float64, error) {
	switch pr.Data.ResultType {
	case "vector":
		var series []promSeries
		if err := json.Unmarshal(pr.Data.Result, &series); err != nil {
			return nil, fmt.Errorf("read vector result: %w", err)
		}
		out := make([]float64, 0, len(series))
		for _, s := range series {
			v, err := sampleValue(s.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case "scalar":
		var s promSample
		if err := json.Unmarshal(pr.Data.Result, &s); err != nil {
			return nil, fmt.Errorf("read scalar result: %w", err)
		}
		v, err := sampleValue(s)
		if err != nil {
			return nil, err
		}
		return []float64{v}, nil
	}
	return nil, fmt.Errorf("the query returns a %s, not a number per series: write an instant expression, e.g. wrap a range in rate()", pr.Data.ResultType)
}

// sampleValue reads the value of a sample; the API writes it as a string
// so that NaN and ±Inf survive JSON.
func sampleValue(s promSample) (float64, error) {
	text, ok := s[1].(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v is not a string", s[1])
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return 0, fmt.Errorf("sample value %q is not a number", text)
	}
	return v, nil
}
