package rollout

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestExecutionKeysParsedIntoThePlan(t *testing.T) {
	plan := mustPlan(t, targetsDoc+`rollout:
  waves: [{name: all, select: "region!=x"}]
  workflow: ship.yaml
  prepare: prepare.yml
  queue_timeout: 3m
  approvals: {permission: maintain, count: 2, expiry: 24h}
  protection_rule: {enabled: true, gates: true}
  freezes:
    - {start: "2026-12-24T00:00:00+01:00", end: "2026-12-27T00:00:00+01:00", reason: christmas}
    - weekly: {days: [sat, Sunday], from: "18:00", to: "23:59", timezone: Europe/Rome}
      regions: [us-1]
  health:
    probes: [{url: "https://{host}/healthz", from: server}, {url: "http://{host}:8080/"}]
`, PlanOptions{})
	if plan.Workflow != "ship.yaml" || plan.Prepare != "prepare.yml" || plan.QueueTimeout != 3*time.Minute {
		t.Errorf("workflow %q prepare %q queue_timeout %s", plan.Workflow, plan.Prepare, plan.QueueTimeout)
	}
	if want := (Approvals{Permission: "maintain", Count: 2, Expiry: 24 * time.Hour}); plan.Approvals != want {
		t.Errorf("approvals %+v, want %+v", plan.Approvals, want)
	}
	if plan.ProtectionRule != (ProtectionRule{Enabled: true, Gates: true}) {
		t.Errorf("protection_rule %+v", plan.ProtectionRule)
	}
	if len(plan.Freezes) != 2 {
		t.Fatalf("freezes %+v", plan.Freezes)
	}
	christmas := plan.Freezes[0]
	if !christmas.Start.Equal(time.Date(2026, 12, 23, 23, 0, 0, 0, time.UTC)) || christmas.Reason != "christmas" || christmas.Weekly != nil {
		t.Errorf("one-off freeze %+v", christmas)
	}
	w := plan.Freezes[1].Weekly
	if w == nil || len(w.Days) != 2 || w.Days[0] != time.Saturday || w.Days[1] != time.Sunday ||
		w.From != 18*60 || w.To != EndOfDay || w.Timezone != "Europe/Rome" || join(plan.Freezes[1].Regions) != "us-1" {
		t.Errorf("weekly freeze %+v %+v", plan.Freezes[1], w)
	}
	if plan.Health.Probes[0].From != FromServer || plan.Health.Probes[1].From != FromRunners {
		t.Errorf("probe from: %q, %q", plan.Health.Probes[0].From, plan.Health.Probes[1].From)
	}
}

func TestExecutionDefaultsFilledInThePlan(t *testing.T) {
	plan := mustPlan(t, targetsDoc+`rollout:
  waves: [{name: all, select: "region!=x"}]
  approvals: {count: 2}
`, PlanOptions{})
	if plan.Workflow != DefaultWorkflow || plan.Prepare != "" || plan.QueueTimeout != 10*time.Minute {
		t.Errorf("workflow %q prepare %q queue_timeout %s", plan.Workflow, plan.Prepare, plan.QueueTimeout)
	}
	if want := (Approvals{Permission: "write", Count: 2, Expiry: 72 * time.Hour}); plan.Approvals != want {
		t.Errorf("approvals %+v, want %+v", plan.Approvals, want)
	}
	if plan.ProtectionRule.Enabled || plan.Freezes != nil {
		t.Errorf("protection_rule %+v freezes %+v", plan.ProtectionRule, plan.Freezes)
	}
}

func TestExecutionValidation(t *testing.T) {
	head := targetsDoc + "rollout:\n  waves: [{name: all, select: \"region!=x\"}]\n"
	tests := []struct {
		name string
		doc  string // line 7 onwards
		want []wantProblem
	}{
		{"approvals by a role that cannot deploy", "  approvals: {permission: read}\n",
			[]wantProblem{{"rollout.approvals.permission", 7, "read", `permission must be write, maintain or admin, not "read"`}}},
		{"approvals needing nobody", "  approvals: {count: 0}\n",
			[]wantProblem{{"rollout.approvals.count", 7, "0}", "count must be at least 1, not 0"}}},
		{"approvals that expire at once", "  approvals: {expiry: 0s}\n",
			[]wantProblem{{"rollout.approvals.expiry", 7, "0s", "expiry must be more than 0s"}}},
		{"a queue_timeout of zero would fail every batch", "  queue_timeout: 0s\n",
			[]wantProblem{{"rollout.queue_timeout", 7, "0s", "queue_timeout must be more than 0s"}}},
		{"a workflow given as a path", "  workflow: .github/workflows/deploy.yml\n",
			[]wantProblem{{"rollout.workflow", 7, ".github", `workflow ".github/workflows/deploy.yml" must be a workflow file name in .github/workflows`}}},
		{"a prepare workflow without extension", "  prepare: setup\n",
			[]wantProblem{{"rollout.prepare", 7, "setup", `prepare "setup" must be a workflow file name`}}},
		{"a probe from somewhere unknown", "  health:\n    probes: [{url: \"http://{host}\", from: agent}]\n",
			[]wantProblem{{"rollout.health.probes[0].from", 8, "agent", `from must be runners or server, not "agent"`}}},
		{"protection_rule with yes instead of true", "  protection_rule: {enabled: yes}\n",
			[]wantProblem{{"rollout.protection_rule.enabled", 7, "yes", `enabled must be true or false, not "yes"`}}},
		{"a freeze both one-off and weekly", "  freezes:\n    - {start: \"2026-12-24T00:00:00Z\", end: \"2026-12-25T00:00:00Z\", weekly: {days: [sat], from: \"00:00\", to: \"24:00\"}}\n",
			[]wantProblem{{"rollout.freezes[0]", 8, "{start", "a freeze is either start and end or weekly, not both"}}},
		{"a freeze without an end", "  freezes: [{start: \"2026-12-24T00:00:00Z\"}]\n",
			[]wantProblem{{"rollout.freezes[0].end", 7, "{start", "end is required with start"}}},
		{"a freeze with nothing but a reason", "  freezes: [{reason: audit}]\n",
			[]wantProblem{{"rollout.freezes[0]", 7, "{reason", "a freeze needs start and end (RFC 3339) or weekly"}}},
		{"a freeze that ends before it starts", "  freezes: [{start: \"2026-12-24T00:00:00Z\", end: \"2026-12-23T00:00:00Z\"}]\n",
			[]wantProblem{{"rollout.freezes[0].end", 7, `"2026-12-23`, "end 2026-12-23T00:00:00Z is not after start 2026-12-24T00:00:00Z"}}},
		{"a freeze start without an offset", "  freezes: [{start: \"2026-12-24 00:00\", end: \"2026-12-25T00:00:00Z\"}]\n",
			[]wantProblem{{"rollout.freezes[0].start", 7, `"2026-12-24 00:00"`, "start must be an RFC 3339 time like 2026-12-24T18:00:00+01:00"}}},
		{"a weekly freeze on a day that does not exist", "  freezes: [{weekly: {days: [sat, sab], from: \"00:00\", to: \"24:00\"}}]\n",
			[]wantProblem{{"rollout.freezes[0].weekly.days[1]", 7, "sab", `days "sab" is not a day`}}},
		{"a weekly freeze without days", "  freezes: [{weekly: {days: [], from: \"00:00\", to: \"24:00\"}}]\n",
			[]wantProblem{{"rollout.freezes[0].weekly.days", 7, "[]", "days is required"}}},
		{"a weekly freeze at 25 o'clock", "  freezes: [{weekly: {days: [sat], from: \"25:00\", to: \"24:00\"}}]\n",
			[]wantProblem{{"rollout.freezes[0].weekly.from", 7, `"25:00"`, `from "25:00" is not a time of day between 00:00 and 24:00`}}},
		{"a weekly freeze starting at the end of the day", "  freezes: [{weekly: {days: [sat], from: \"24:00\", to: \"01:00\"}}]\n",
			[]wantProblem{{"rollout.freezes[0].weekly.from", 7, `"24:00"`, "from must be before 24:00"}}},
		{"a weekly freeze with an empty window", "  freezes: [{weekly: {days: [sat], from: \"18:00\", to: \"18:00\"}}]\n",
			[]wantProblem{{"rollout.freezes[0].weekly.to", 7, `"18:00"}`, "to is the same as from (18:00): the window would be empty"}}},
		{"a weekly freeze without to", "  freezes: [{weekly: {days: [sat], from: \"18:00\"}}]\n",
			[]wantProblem{{"rollout.freezes[0].weekly.to", 7, "{days", "to is required"}}},
		{"a weekly freeze in a timezone that does not exist", "  freezes: [{weekly: {days: [sat], from: \"18:00\", to: \"20:00\", timezone: Europe/Milano}}]\n",
			[]wantProblem{{"rollout.freezes[0].weekly.timezone", 7, "Europe/Milano", `timezone "Europe/Milano" is not an IANA timezone`}}},
		{"a freeze for a region no target is in", "  freezes: [{start: \"2026-12-24T00:00:00Z\", end: \"2026-12-25T00:00:00Z\", regions: [us-1, us1]}]\n",
			[]wantProblem{{"rollout.freezes[0].regions[1]", 7, "us1]", `freeze region "us1" is the region of no target, so the window would hold nothing; the regions are eu-1, us-1`}}},
		{"a freeze key misspelt", "  freezes: [{weekly: {days: [sat], from: \"18:00\", to: \"20:00\", timeZone: UTC}}]\n",
			[]wantProblem{{"rollout.freezes[0].weekly.timeZone", 7, "timeZone", "did you mean timezone?"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := head + tt.doc
			got := problemsOf(doc, PlanOptions{})
			if len(got) != len(tt.want) {
				t.Fatalf("want %d problems, got %d:\n%v", len(tt.want), len(got), Problems(got))
			}
			for i, w := range tt.want {
				p := got[i]
				column := columnOf(t, doc, w.line, w.at)
				if p.Path != w.path || p.Line != w.line || p.Column != column || !strings.Contains(p.Message, w.message) {
					t.Errorf("got  %s\nwant %d:%d: %s: …%s…", p.Error(), w.line, column, w.path, w.message)
				}
			}
		})
	}
}

func TestParseClock(t *testing.T) {
	tests := []struct {
		in   string
		want Clock
		bad  bool
	}{
		{in: "18:00", want: 18 * 60},
		{in: "00:00", want: 0},
		{in: "08:30", want: 8*60 + 30},
		{in: "24:00", want: EndOfDay},
		{in: "23:59", want: 23*60 + 59},
		{in: "23:58", want: 23*60 + 58},
		{in: "8:00", bad: true},
		{in: "24:01", bad: true},
		{in: "12:60", bad: true},
		{in: "+1:00", bad: true},
		{in: "1800", bad: true},
	}
	for _, tt := range tests {
		got, err := ParseClock(tt.in)
		if (err != nil) != tt.bad || (!tt.bad && got != tt.want) {
			t.Errorf("ParseClock(%q) = %v, %v; want %v (bad %v)", tt.in, got, err, tt.want, tt.bad)
		}
	}
	if s := Clock(8*60 + 5).String(); s != "08:05" {
		t.Errorf("String = %q", s)
	}
}

func TestParseFreezesStandsAlone(t *testing.T) {
	n := yamlNode(t, `[{weekly: {days: [fri], from: "18:00", to: "08:00"}, reason: weekend}, {start: x}]`)
	fs, problems := ParseFreezes(n, "apps.a.environments.prod.freezes")
	if len(fs) != 2 || fs[0].Weekly == nil || fs[0].Weekly.To != 8*60 {
		t.Errorf("freezes %+v", fs)
	}
	if len(problems) != 2 || problems[0].Path != "apps.a.environments.prod.freezes[1].start" {
		t.Errorf("problems %v", Problems(problems))
	}
}

func TestFreezeDescribe(t *testing.T) {
	f := Freeze{Weekly: &Weekly{Days: []time.Weekday{time.Saturday, time.Sunday}, From: 18 * 60, To: EndOfDay, Timezone: "Europe/Rome"},
		Regions: []string{"us-1"}, Reason: "weekend"}
	if got, want := f.Describe(), `freeze "weekend" (weekly sat,sun 18:00-24:00 Europe/Rome, regions us-1)`; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	g := Freeze{Start: time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 12, 27, 0, 0, 0, 0, time.UTC)}
	if got, want := g.Describe(), "freeze (2026-12-24T00:00:00Z to 2026-12-27T00:00:00Z, all regions)"; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

func yamlNode(t *testing.T, doc string) *yaml.Node {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		t.Fatal(err)
	}
	return n.Content[0]
}

// The executor keeps the plan it runs as JSON, so a plan with every key
// must come back the same.
func TestPlanSurvivesJSON(t *testing.T) {
	plan := mustPlan(t, seedDoc(t)+`  queue_timeout: 3m
  approvals: {permission: maintain}
  protection_rule: {enabled: true}
  freezes:
    - {start: "2026-12-24T00:00:00+01:00", end: "2026-12-27T00:00:00+01:00", reason: christmas}
    - {weekly: {days: [fri], from: "18:00", to: "08:00", timezone: Europe/Rome}, regions: [us-1]}
`, PlanOptions{})
	data, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	var back Plan
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, plan) {
		t.Errorf("plan changed through JSON:\n%s", data)
	}
}
