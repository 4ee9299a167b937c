package rollout

import (
	"errors"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestParseSeedExample(t *testing.T) {
	cfg := mustParse(t, seedDoc(t))
	if len(cfg.Targets) != 19 {
		t.Fatalf("targets: got %d, want 19", len(cfg.Targets))
	}
	if got := cfg.Targets[0]; got.Host != "eu1-a-01" || got.Labels["canary"] != "true" || got.Labels["az"] != "eu-1a" {
		t.Errorf("first target: got %+v", got)
	}
	s := cfg.Rollout
	resto := s.Waves[2]
	if resto.Name != "resto" || resto.By != ByAZ || resto.ParallelRegions != 2 || resto.Bake != 10*time.Minute || resto.BatchBake != nil {
		t.Errorf("wave resto: got %+v", resto)
	}
	if s.MaxUnavailable != Percent(25) || s.OnFailure != Stop || strings.Join(s.ApprovalsBetween, ",") != "canary" {
		t.Errorf("rollout: got max_unavailable %v, on_failure %q, approvals %v", s.MaxUnavailable, s.OnFailure, s.ApprovalsBetween)
	}
	h := s.Health
	if h.Interval != 30*time.Second || h.FailuresToStop != 2 || h.Probes[0].URL != "https://{host}/healthz" ||
		h.Metrics[0].Name != "error-rate" || *h.Metrics[0].Max != 0.01 || h.Metrics[0].Min != nil ||
		h.Alerts.BlockOn[0] != "severity=critical" {
		t.Errorf("health: got %+v", h)
	}
}

func TestParseBatchBakeZeroIsASingleRead(t *testing.T) {
	cfg := mustParse(t, `rollout:
  waves: [{name: w, select: "a=b", batch_bake: 0s}, {name: v, select: "a=c"}]
`)
	if bb := cfg.Rollout.Waves[0].BatchBake; bb == nil || *bb != 0 {
		t.Errorf("batch_bake: 0s must be set to zero, got %v", bb)
	}
	if cfg.Rollout.Waves[1].BatchBake != nil {
		t.Errorf("no batch_bake must stay unset")
	}
}

func TestParseStrictness(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		path    string
		line    int
		at      string // the expected column is where this first appears on line
		message string
	}{
		{"camelCase key from the seed", "rollout:\n  maxUnavailable: 25%\n",
			"rollout.maxUnavailable", 2, "maxUnavailable", "keys are snake_case, write max_unavailable"},
		{"camelCase key inside a wave", "rollout:\n  waves:\n    - {name: a, select: \"x=y\", parallelRegions: 2}\n",
			"rollout.waves[0].parallelRegions", 3, "parallelRegions", "write parallel_regions"},
		{"camelCase key in health", "rollout:\n  health:\n    failuresToStop: 2\n",
			"rollout.health.failuresToStop", 3, "failuresToStop", "write failures_to_stop"},
		{"camelCase key in a probe", "rollout:\n  health:\n    probes: [{url: \"http://{host}\", expectStatus: 204}]\n",
			"rollout.health.probes[0].expectStatus", 3, "expectStatus", "write expect_status"},
		{"typo gets a suggestion", "rollout:\n  waves:\n    - {name: a, selct: \"x=y\"}\n",
			"rollout.waves[0].selct", 3, "selct", "did you mean select?"},
		{"unrelated key lists the valid ones", "targets:\n  - {host: a, zone: b}\n",
			"targets[0].zone", 2, "zone", "valid keys are host, labels"},
		{"unknown top-level key", "rolout: {}\n", "rolout", 1, "rolout", "did you mean rollout?"},
		{"key given twice", "rollout:\n  on_failure: stop\n  on_failure: rollback-all\n",
			"rollout.on_failure", 3, "on_failure", "given twice (first on line 2)"},
		{"waves must be a list", "rollout:\n  waves: {name: a}\n", "rollout.waves", 2, "{name", "waves must be a list"},
		{"a wave must be a mapping", "rollout:\n  waves: [canary]\n", "rollout.waves[0]", 2, "canary", "a wave must be a mapping"},
		{"labels must be a mapping", "targets:\n  - {host: a, labels: [region]}\n", "targets[0].labels", 2, "[region]", "labels must be a mapping"},
		{"label without a value", "targets:\n  - host: a\n    labels: {canary: }\n", "targets[0].labels.canary", 3, "canary", "label canary has no value"},
		{"select must be text", "rollout:\n  waves: [{name: a, select: [x=y]}]\n", "rollout.waves[0].select", 2, "[x=y]", "select must be a single value"},
		{"duration without a unit", "rollout:\n  waves: [{name: a, select: x=y, bake: 15}]\n", "rollout.waves[0].bake", 2, "15", "bake must be a duration like 15m or 30s"},
		{"duration that is not one", "rollout:\n  health: {interval: soon}\n", "rollout.health.interval", 2, "soon", "interval must be a duration"},
		{"bad percentage", "rollout:\n  max_unavailable: 25x\n", "rollout.max_unavailable", 2, "25x", `max_unavailable "25x" is not a whole number or a percentage`},
		{"percentage over 100", "rollout:\n  max_unavailable: 150%\n", "rollout.max_unavailable", 2, "150%", "more than 100%"},
		{"zero max_unavailable", "rollout:\n  waves: [{name: a, select: x=y, max_unavailable: 0}]\n", "rollout.waves[0].max_unavailable", 2, "0}", "must be at least 1"},
		{"parallel as a fraction", "rollout:\n  parallel: 2.5\n", "rollout.parallel", 2, "2.5", "not a whole number"},
		{"failures_to_stop 0", "rollout:\n  health: {failures_to_stop: 0}\n", "rollout.health.failures_to_stop", 2, "0}", "failures_to_stop must be at least 1, not 0"},
		{"parallel_regions 0", "rollout:\n  waves: [{name: a, select: x=y, by: az, parallel_regions: 0}]\n", "rollout.waves[0].parallel_regions", 2, "0}", "parallel_regions must be at least 1"},
		{"parallel_regions as text", "rollout:\n  waves: [{name: a, select: x=y, by: az, parallel_regions: two}]\n", "rollout.waves[0].parallel_regions", 2, "two", "parallel_regions must be a whole number"},
		{"metric bound as text", "rollout:\n  health: {metrics: [{name: e, query: q, max: low}]}\n", "rollout.health.metrics[0].max", 2, "low", "max must be a number"},
		{"expect_status below 100", "rollout:\n  health: {probes: [{url: \"http://{host}\", expect_status: 2}]}\n", "rollout.health.probes[0].expect_status", 2, "2}", "expect_status must be at least 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, problems := Parse([]byte(tt.doc))
			if len(problems) != 1 {
				t.Fatalf("want one problem, got %d:\n%v", len(problems), Problems(problems))
			}
			p := problems[0]
			column := columnOf(t, tt.doc, tt.line, tt.at)
			if p.Path != tt.path || p.Line != tt.line || p.Column != column || !strings.Contains(p.Message, tt.message) {
				t.Errorf("got %s\nwant %d:%d: %s: …%s…", p.Error(), tt.line, column, tt.path, tt.message)
			}
		})
	}
}

func TestParseReportsEveryProblemAtOnce(t *testing.T) {
	_, problems := Parse([]byte("rollout:\n  maxUnavailable: 1\n  onFailure: stop\n  waves: [{name: a, select: x=y, bake: 1}]\n"))
	if len(problems) != 3 {
		t.Errorf("want 3 problems in one run, got:\n%v", Problems(problems))
	}
}

func TestParseYAMLSyntaxErrorKeepsTheLine(t *testing.T) {
	_, problems := Parse([]byte("rollout:\n  waves: [\n  on_failure: stop\n"))
	if len(problems) != 1 || problems[0].Line == 0 {
		t.Errorf("want one problem with a line, got %v", problems)
	}
}

func TestParseAnchorsAndMergeKeys(t *testing.T) {
	cfg := mustParse(t, `rollout:
  waves:
    - &slow {name: eu-1, select: "region=eu-1", by: az, bake: 10m}
    - <<: *slow
      name: us-1
      select: "region=us-1"
`)
	w := cfg.Rollout.Waves[1]
	if w.Name != "us-1" || w.Select != "region=us-1" || w.By != ByAZ || w.Bake != 10*time.Minute {
		t.Errorf("merged wave: got %+v", w)
	}
}

func TestParseMergedUnknownKeyPointsAtTheAnchor(t *testing.T) {
	_, problems := Parse([]byte("base: &b {bake: 1m, bakee: 2m}\n"))
	if len(problems) == 0 {
		t.Fatal("want problems")
	}
	_, problems = Parse([]byte("rollout:\n  waves:\n    - &b {name: a, select: x=y, bakee: 2m}\n    - {<<: *b, name: c}\n"))
	for _, p := range problems {
		if p.Line != 3 {
			t.Errorf("a key merged from an anchor is reported where it is written: %v", p)
		}
	}
	if len(problems) != 2 {
		t.Errorf("want the typo once per wave that uses it, got %v", Problems(problems))
	}
}

func TestUnquotedBooleanLabelMatchesItsText(t *testing.T) {
	plan := mustPlan(t, `targets:
  - {host: a, labels: {canary: true}}
  - {host: b, labels: {canary: false}}
rollout:
  waves: [{name: canary, select: "canary=true"}, {name: rest, select: "canary!=true"}]
`, PlanOptions{})
	if got := plan.Stages[0].Passes[0].Hosts; len(got) != 1 || got[0] != "a" {
		t.Errorf("canary: true must match canary=true: got %v", got)
	}
}

func TestUnmarshalIntoAStructIsStrictToo(t *testing.T) {
	var env struct {
		Cluster string  `yaml:"cluster"`
		Targets Targets `yaml:"targets"`
		Rollout *Spec   `yaml:"rollout"`
	}
	err := yaml.Unmarshal([]byte("cluster: prod-eu\nrollout:\n  onFailure: stop\n"), &env)
	var problems Problems
	if !errors.As(err, &problems) || len(problems) != 1 {
		t.Fatalf("want Problems, got %v", err)
	}
	if p := problems[0]; p.Path != "rollout.onFailure" || p.Line != 3 || p.Column != 3 {
		t.Errorf("got %v", p)
	}

	err = yaml.Unmarshal([]byte(seedDoc(t)), &env)
	if err != nil {
		t.Fatalf("seed example: %v", err)
	}
	if _, problems := NewPlan(env.Rollout, env.Targets, PlanOptions{}); len(problems) > 0 {
		t.Errorf("seed example decoded through yaml.Unmarshal does not plan: %v", Problems(problems))
	}
}

func TestQuantityYAMLRoundTrip(t *testing.T) {
	for _, q := range []Quantity{Number(3), Percent(25)} {
		out, err := yaml.Marshal(struct{ Q Quantity }{q})
		if err != nil {
			t.Fatal(err)
		}
		var back struct{ Q Quantity }
		if err := yaml.Unmarshal(out, &back); err != nil || back.Q != q {
			t.Errorf("%v → %q → %v (%v)", q, out, back.Q, err)
		}
	}
	var bad struct{ Q Quantity }
	if err := yaml.Unmarshal([]byte("q: lots\n"), &bad); err == nil {
		t.Error("want an error for q: lots")
	}
}

func TestParseSpecUnderAnEnvironmentKeepsItsPath(t *testing.T) {
	const prefix = "apps.checkout.environments.prod.rollout"
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(`apps:
  checkout:
    environments:
      prod:
        rollout:
          waves: [{name: a, select: "x=y", bake: 1}, {name: b, select: "x=z"}]
`), &doc); err != nil {
		t.Fatal(err)
	}
	node := doc.Content[0].Content[1].Content[1].Content[1].Content[1].Content[1]
	_, problems := ParseSpec(node, prefix)
	if len(problems) != 1 || problems[0].Path != prefix+".waves[0].bake" || problems[0].Line != 6 {
		t.Fatalf("parse: got %v", Problems(problems))
	}

	// Plan problems found after parsing point into the same document.
	node.Content[1].Content[0].Content[5].Value = "1m"
	spec, problems := ParseSpec(node, prefix)
	if len(problems) > 0 {
		t.Fatal(Problems(problems))
	}
	targets := []Target{{Host: "h", Labels: map[string]string{"x": "y"}}}
	_, problems = NewPlan(spec, targets, PlanOptions{})
	if len(problems) != 1 || problems[0].Path != prefix+".waves[1].select" || problems[0].Line != 6 {
		t.Errorf("plan: got %v", Problems(problems))
	}
}

func TestEmptyListItemIsAProblem(t *testing.T) {
	_, problems := Parse([]byte("rollout:\n  regions:\n    - eu-1\n    -\n"))
	if len(problems) != 1 || problems[0].Path != "rollout.regions[1]" || !strings.Contains(problems[0].Message, "regions is empty") {
		t.Errorf("got %v", Problems(problems))
	}
}
