package rollout

import (
	"strings"
	"testing"
)

// targetsDoc is lines 1–4 of every case below; the rollout starts on line 5.
const targetsDoc = `targets:
  - {host: a1, labels: {region: eu-1, az: eu-1a}}
  - {host: b1, labels: {region: eu-1, az: eu-1b}}
  - {host: u1, labels: {region: us-1, az: us-1a}}
`

type wantProblem struct {
	path    string
	line    int
	at      string // text where the column points, first on that line
	message string
}

func TestValidationRules(t *testing.T) {
	noRollback := PlanOptions{}
	withRollback := PlanOptions{RollbackEnabled: true}
	tests := []struct {
		name string
		doc  string
		opts PlanOptions
		want []wantProblem
	}{
		{"a wave that selects no target", targetsDoc + `rollout:
  waves:
    - {name: all, select: "region in (eu-1, us-1)"}
    - {name: ap, select: "region=ap-1"}
`, noRollback, []wantProblem{{"rollout.waves[1].select", 8, `"region=ap-1"`, `wave ap selects no target: "region=ap-1" matches none of the 3 targets`}}},

		{"a target in two waves", targetsDoc + `rollout:
  waves:
    - {name: eu, select: "region=eu-1"}
    - {name: a-zones, select: "az in (eu-1a, us-1a)"}
`, noRollback, []wantProblem{{"targets[0]", 2, "{host: a1", "a1 is selected by waves eu and a-zones; a target belongs to exactly one wave"}}},

		{"a target in no wave", targetsDoc + `rollout:
  waves:
    - {name: eu, select: "region=eu-1"}
`, noRollback, []wantProblem{{"targets[2]", 4, "{host: u1", "u1 is selected by no wave"}}},

		{"by az needs the az label", `targets:
  - {host: a1, labels: {region: eu-1}}
rollout:
  waves: [{name: w, select: "region=eu-1", by: az}]
`, noRollback, []wantProblem{{"targets[0].labels", 2, "{region", "a1 has no az label, but wave w splits by az"}}},

		{"by region needs the region label", `targets:
  - {host: a1, labels: {tier: web, az: eu-1a}}
rollout:
  waves: [{name: w, select: "tier=web", by: region}]
`, noRollback, []wantProblem{{"targets[0].labels", 2, "{tier", "a1 has no region label, but wave w splits by region"}}},

		{"by region needs the az label too", `targets:
  - {host: a1, labels: {tier: web, region: eu-1, az: eu-1a}}
  - {host: a2, labels: {tier: web, region: eu-1}}
rollout:
  waves: [{name: w, select: "tier=web", by: region}]
`, noRollback, []wantProblem{{"targets[1].labels", 3, "{tier", "a2 has no az label, but wave w splits by region, and a wave with by needs both region and az on every target: add labels: {az: …}"}}},

		{"by az needs the region label too", `targets:
  - {host: a1, labels: {az: eu-1a}}
rollout:
  waves: [{name: w, select: "az=eu-1a", by: az}]
`, noRollback, []wantProblem{{"targets[0].labels", 2, "{az", "a1 has no region label, but wave w splits by az, and each AZ's pass runs in its region"}}},

		{"by region names every target without a region", `targets:
  - {host: a1, labels: {tier: web, region: eu-1, az: eu-1a}}
  - {host: a2, labels: {tier: web, az: eu-1b}}
  - {host: a3, labels: {tier: web, az: eu-1a}}
rollout:
  waves: [{name: w, select: "tier=web", by: region}]
`, noRollback, []wantProblem{
			{"targets[1].labels", 3, "{tier", "a2 has no region label, but wave w splits by region:"},
			{"targets[2].labels", 4, "{tier", "a3 has no region label, but wave w splits by region:"},
		}},

		{"an undivided wave over several regions needs a region on every target", `targets:
  - {host: a1, labels: {region: eu-1}}
  - {host: x1}
rollout:
  waves: [{name: w, select: "region!=us-1"}]
`, noRollback, []wantProblem{{"targets[1].labels", 3, "{host: x1", "x1 has no region label, but wave w spans several regions"}}},

		{"a region label that would break names", `targets:
  - {host: a1, labels: {region: eu/1, az: eu-1a}}
rollout:
  waves: [{name: w, select: "az=eu-1a", by: az}]
`, noRollback, []wantProblem{{"targets[0].labels.region", 2, "eu/1", `region "eu/1" cannot be empty or contain /, +, @, #`}}},

		{"rollback-wave without rollback enabled", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x"}]
  on_failure: rollback-wave
`, noRollback, []wantProblem{{"rollout.on_failure", 7, "rollback-wave", "on_failure: rollback-wave rolls targets back, so it needs rollback enabled"}}},

		{"rollback-all without rollback enabled", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x"}]
  on_failure: rollback-all
`, noRollback, []wantProblem{{"rollout.on_failure", 7, "rollback-all", "needs rollback enabled"}}},

		{"rollback-all with rollback enabled is fine", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x"}]
  on_failure: rollback-all
`, withRollback, nil},

		{"on_failure spelled another way", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x"}]
  on_failure: rollback
`, withRollback, []wantProblem{{"rollout.on_failure", 7, "rollback", `on_failure must be stop, rollback-wave or rollback-all, not "rollback"`}}},

		{"parallel above the server's max_parallel", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x", parallel: 20}]
  parallel: 17
`, PlanOptions{MaxParallel: 16}, []wantProblem{
			{"rollout.waves[0].parallel", 6, "20", "parallel 20 is more than this server allows (max_parallel 16)"},
			{"rollout.parallel", 7, "17", "parallel 17 is more than this server allows"},
		}},

		{"parallel at the server's max_parallel is fine", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x", parallel: 4}]
`, PlanOptions{MaxParallel: 4}, nil},

		{"bake over 24h", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x", bake: 25h}]
`, noRollback, []wantProblem{{"rollout.waves[0].bake", 6, "25h", "bake must be between 0s and 24h, not 25h0m0s"}}},

		{"batch_bake over 24h", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x", batch_bake: 1441m}]
`, noRollback, []wantProblem{{"rollout.waves[0].batch_bake", 6, "1441m", "batch_bake must be between 0s and 24h"}}},

		{"negative bake", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x", bake: -1m}]
`, noRollback, []wantProblem{{"rollout.waves[0].bake", 6, "-1m", "bake must be between 0s and 24h"}}},

		{"bake of exactly 24h is fine", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x", bake: 24h}]
`, noRollback, nil},

		{"probe url that does not go to the target", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x"}]
  health:
    probes: [{url: "https://status.example.com/{host}"}]
`, noRollback, []wantProblem{{"rollout.health.probes[0].url", 8, `"https`, "must start with http://{host} or https://{host}"}}},

		{"probe url using the host as a subdomain", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x"}]
  health:
    probes: [{url: "https://{host}.evil.example/healthz"}]
`, noRollback, []wantProblem{{"rollout.health.probes[0].url", 8, `"https`, "probes reach only the stage's targets"}}},

		{"probe url without a url", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x"}]
  health:
    probes: [{expect_status: 204}]
`, noRollback, []wantProblem{{"rollout.health.probes[0].url", 8, "{expect", `url "" must start with`}}},

		{"probe urls with a port or a path are fine", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x"}]
  health:
    probes: [{url: "http://{host}:8080/healthz"}, {url: "https://{host}"}, {url: "http://{host}?x=1"}]
`, noRollback, nil},

		{"expect_status beyond HTTP", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x"}]
  health:
    probes: [{url: "http://{host}", expect_status: 700}]
`, noRollback, []wantProblem{{"rollout.health.probes[0].expect_status", 8, "700", "between 100 and 599"}}},

		{"approvals_between names a wave that does not exist", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x"}]
  approvals_between: [canary]
`, noRollback, []wantProblem{{"rollout.approvals_between[0]", 7, "canary", `approvals_between names "canary", which is no wave; the waves are all`}}},

		{"approvals_between names the last wave", targetsDoc + `rollout:
  waves:
    - {name: eu, select: "region=eu-1"}
    - {name: us, select: "region=us-1"}
  approvals_between: [eu, us]
`, noRollback, []wantProblem{{"rollout.approvals_between[1]", 9, "us]", `approvals_between names "us", the last wave: an approval holds back the waves after it, and none follows us`}}},

		{"two waves with the same name", targetsDoc + `rollout:
  waves:
    - {name: eu, select: "region=eu-1"}
    - {name: eu, select: "region=us-1"}
`, noRollback, []wantProblem{{"rollout.waves[1].name", 8, "eu,", `wave name "eu" is already used by waves[0]`}}},

		{"by zone is not a division", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x", by: zone}]
`, noRollback, []wantProblem{{"rollout.waves[0].by", 6, "zone", `by must be az or region, not "zone"`}}},

		{"parallel_regions on an undivided wave", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x", parallel_regions: 2}]
`, noRollback, []wantProblem{{"rollout.waves[0].parallel_regions", 6, "2}", "parallel_regions needs by: az or by: region"}}},

		{"a select with a syntax error", targetsDoc + `rollout:
  waves: [{name: all, select: "region in (eu-1, us-1"}]
`, noRollback, []wantProblem{{"rollout.waves[0].select", 6, `"region`, `select "region in (eu-1, us-1": at character 22: expected , or )`}}},

		{"a wave without select", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x"}, {name: none}]
`, noRollback, []wantProblem{{"rollout.waves[1].select", 6, "{name: none", "select is required"}}},

		{"a wave without a name", targetsDoc + `rollout:
  waves: [{select: "region!=x"}]
`, noRollback, []wantProblem{{"rollout.waves[0].name", 6, "{select", "name is required"}}},

		{"a wave name that would break names", targetsDoc + `rollout:
  waves: [{name: eu/all, select: "region!=x"}]
`, noRollback, []wantProblem{{"rollout.waves[0].name", 6, "eu/all", `name "eu/all" cannot contain /, +, @, #`}}},

		{"a rollout without waves", targetsDoc + `rollout:
  on_failure: stop
`, noRollback, []wantProblem{{"rollout.waves", 5, "rollout", "a rollout needs at least one wave"}}},

		{"a region listed twice", targetsDoc + `rollout:
  regions: [eu-1, us-1, eu-1]
  waves: [{name: all, select: "region!=x"}]
`, noRollback, []wantProblem{{"rollout.regions[2]", 6, "eu-1]", `region "eu-1" is already listed as regions[0]`}}},

		{"a target without host", `targets:
  - {labels: {region: eu-1}}
rollout:
  waves: [{name: all, select: "region=eu-1"}]
`, noRollback, []wantProblem{{"targets[0].host", 2, "{labels", "host is required"}}},

		{"a host listed twice", `targets:
  - {host: a1, labels: {region: eu-1}}
  - {host: a1, labels: {region: eu-1}}
rollout:
  waves: [{name: all, select: "region=eu-1"}]
`, noRollback, []wantProblem{{"targets[1].host", 3, "a1", `host "a1" is already targets[0]`}}},

		{"interval of zero", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x"}]
  health: {interval: 0s}
`, noRollback, []wantProblem{{"rollout.health.interval", 7, "0s", "interval must be more than 0s"}}},

		{"a metric without bounds can never be red", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x"}]
  health:
    metrics: [{name: error-rate, query: "sum(x)"}]
`, noRollback, []wantProblem{{"rollout.health.metrics[0]", 8, "{name", `metric "error-rate" needs max, min or both`}}},

		{"a metric with min above max", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x"}]
  health:
    metrics: [{name: rps, query: "sum(x)", min: 10, max: 1}]
`, noRollback, []wantProblem{{"rollout.health.metrics[0].min", 8, "10", "min 10 is above max 1"}}},

		{"a metric without name or query", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x"}]
  health:
    metrics: [{max: 1}]
`, noRollback, []wantProblem{
			{"rollout.health.metrics[0].name", 8, "{max", "name is required"},
			{"rollout.health.metrics[0].query", 8, "{max", "query is required"},
		}},

		{"block_on that is not a selector", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x"}]
  health:
    alerts: {block_on: ["severity"]}
`, noRollback, []wantProblem{{"rollout.health.alerts.block_on[0]", 8, `"severity"`, `block_on "severity": at character 9: expected =, !=, in or notin`}}},

		{"block_on naming an alert, as the reference once said to", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x"}]
  health:
    alerts: {block_on: [HighErrorRate]}
`, noRollback, []wantProblem{{"rollout.health.alerts.block_on[0]", 8, "HighErrorRate", `expected =, !=, in or notin after "HighErrorRate", found the end; an entry is label conditions the alert must match: write alertname=HighErrorRate for the alert of that name`}}},

		{"prometheus_url that is not a URL", targetsDoc + `rollout:
  waves: [{name: all, select: "region!=x"}]
  prometheus_url: prometheus:9090
`, noRollback, []wantProblem{{"rollout.prometheus_url", 7, "prometheus:9090", "must be an http(s) URL"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problemsOf(tt.doc, tt.opts)
			if len(got) != len(tt.want) {
				t.Fatalf("want %d problems, got %d:\n%v", len(tt.want), len(got), Problems(got))
			}
			for i, w := range tt.want {
				p := got[i]
				column := columnOf(t, tt.doc, w.line, w.at)
				if p.Path != w.path || p.Line != w.line || p.Column != column || !strings.Contains(p.Message, w.message) {
					t.Errorf("got  %s\nwant %d:%d: %s: …%s…", p.Error(), w.line, column, w.path, w.message)
				}
			}
		})
	}
}

func TestSpecBuiltInGoIsValidatedWithoutPositions(t *testing.T) {
	spec := &Spec{Waves: []Wave{{Name: "w", Select: "tier=web", By: "zone"}}}
	targets := []Target{{Host: "a", Labels: map[string]string{"tier": "web"}}}
	_, problems := NewPlan(spec, targets, PlanOptions{})
	if len(problems) != 1 {
		t.Fatalf("want one problem, got %v", Problems(problems))
	}
	if p := problems[0]; p.Path != "rollout.waves[0].by" || p.Line != 0 || p.Error() != `rollout.waves[0].by: by must be az or region, not "zone"` {
		t.Errorf("got %#v", p)
	}
}

func TestSelectorErrorsDoNotAlsoReportTargetsInNoWave(t *testing.T) {
	// With one select unreadable, "in no wave" would blame the targets for
	// the typo; only the select is reported.
	got := problemsOf(targetsDoc+`rollout:
  waves: [{name: eu, select: "region=eu-1"}, {name: us, select: "region=="}]
`, PlanOptions{})
	if len(got) != 1 || got[0].Path != "rollout.waves[1].select" {
		t.Errorf("got %v", Problems(got))
	}
}

func TestNoPlanWithoutARollout(t *testing.T) {
	plan, problems := NewPlan(nil, nil, PlanOptions{})
	if plan != nil || len(problems) != 1 {
		t.Errorf("got %v, %v", plan, problems)
	}
}
