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

func TestJudge(t *testing.T) {
	tests := []struct {
		name           string
		readings       []Reading
		failuresToStop int
		bakeOver       bool
		want           Verdict
		reason         string
	}{
		{"no reading yet while baking", nil, 2, false, Continue, "no reading yet"},
		{"no reading at the end of the bake does not pass", nil, 2, true, Continue, "no reading yet"},
		{"green while baking keeps baking", []Reading{green, green}, 2, false, Continue, "green, baking"},
		{"green last reading when the bake is over passes", []Reading{red, green}, 2, true, Pass, "green after 2 readings"},
		{"one red with failures_to_stop 2 keeps baking", []Reading{green, red}, 2, false, Continue, "red 1 of 2"},
		{"two consecutive reds fail during the bake", []Reading{green, red, red}, 2, false, Fail, "2 consecutive red readings (failures_to_stop 2): metric error-rate"},
		{"reds that are not consecutive do not fail", []Reading{red, green, red}, 2, false, Continue, "red 1 of 2"},
		{"a red last reading after the bake keeps reading", []Reading{green, red}, 2, true, Continue, "red 1 of 2"},
		{"reading on after the bake fails at failures_to_stop", []Reading{green, red, red}, 2, true, Fail, "2 consecutive"},
		{"failures_to_stop 1 fails on the first red", []Reading{red}, 1, false, Fail, "1 consecutive red readings"},
		{"failures_to_stop 0 counts as the default 1", []Reading{red}, 0, false, Fail, "failures_to_stop 1"},
		{"a red without reasons still fails", []Reading{{}}, 1, false, Fail, ": red"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Judge(tt.readings, tt.failuresToStop, tt.bakeOver)
			if got.Verdict != tt.want || !strings.Contains(got.Reason, tt.reason) {
				t.Errorf("got %s %q, want %s …%s…", got.Verdict, got.Reason, tt.want, tt.reason)
			}
			if g := (Gate{FailuresToStop: tt.failuresToStop}).Judge(tt.readings, tt.bakeOver); g != got {
				t.Errorf("Gate.Judge %v differs from Judge %v", g, got)
			}
		})
	}
}

func TestLastRed(t *testing.T) {
	two := Reading{Reasons: []string{"a", "b"}}
	if got := LastRed([]Reading{two, red, green}); got != red.Reasons[0] {
		t.Errorf("LastRed = %q", got)
	}
	if got := LastRed([]Reading{red, two}); got != "a; b" {
		t.Errorf("LastRed = %q", got)
	}
	if got := LastRed([]Reading{green}); got != "" {
		t.Errorf("LastRed = %q", got)
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
