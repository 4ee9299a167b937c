package health

import (
	"strings"
	"testing"

	"github.com/ripcord/ripcord/rollout"
)

var (
	green = Reading{Green: true}
	red   = Reading{Reasons: []string{"metric error-rate (us-1/us-1a): value 0.2 above max 0.01"}}
)

// The reason a reading gives the stage's gate: a red reading without
// reasons is still named red, several are joined.
func TestLastReason(t *testing.T) {
	two := Reading{Reasons: []string{"a", "b"}}
	for _, tt := range []struct {
		r    Reading
		want string
	}{{green, ""}, {red, red.Reasons[0]}, {two, "a; b"}, {Reading{}, "red"}} {
		if got := LastReason(tt.r); got != tt.want {
			t.Errorf("LastReason(%+v) = %q, want %q", tt.r, got, tt.want)
		}
	}
}

func TestMergeAndRunnerProbes(t *testing.T) {
	server := Reading{Green: true, Metrics: []MetricResult{{Name: "error-rate", Green: true}}}
	ok := ProbeResult{URL: "http://a/healthz", Host: "a", From: "runners", ExpectStatus: 200, Status: 200, Green: true}
	bad := ProbeResult{URL: "http://b/healthz", Host: "b", From: "runners", ExpectStatus: 200, Status: 503}
	tests := []struct {
		name    string
		results []ProbeResult
		green   bool
		reason  string
	}{
		{"all runner probes green", []ProbeResult{ok}, true, ""},
		{"a red runner probe without a reason turns the reading red", []ProbeResult{ok, bad}, false, "probe http://b/healthz: red"},
		{"a judged red runner probe keeps its reason", []ProbeResult{JudgeProbe(bad)}, false, "probe http://b/healthz: status 503, expected 200"},
		{"no runner result is red", nil, false, "probes: no result from the runners"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Merge(server, FromRunnerProbes(tt.results, server.At))
			if got.Green != tt.green || !strings.Contains(strings.Join(got.Reasons, "\n"), tt.reason) {
				t.Errorf("green %v reasons %q", got.Green, got.Reasons)
			}
			if len(got.Metrics) != 1 || len(got.Probes) != len(tt.results) {
				t.Errorf("merge lost results: %+v", got)
			}
		})
	}
}

func TestPassScope(t *testing.T) {
	p := rollout.Pass{Name: "resto/us-1/us-1a", Region: "us-1", AZ: "us-1a", Hosts: []string{"us1-a-01"}}
	got := PassScope("myapp", "prod", p)
	if got.Application != "myapp" || got.Environment != "prod" || got.Region != "us-1" || got.AZ != "us-1a" || len(got.Hosts) != 1 {
		t.Errorf("got %+v", got)
	}
	if w := got.where(); w != " (us-1/us-1a)" {
		t.Errorf("where = %q", w)
	}
}
