package rollout

import (
	"cmp"
	"regexp"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Config is the part of an environment's configuration this package owns:
// its `targets` and its `rollout`.
type Config struct {
	Targets Targets `yaml:"targets"`
	// Rollout is nil when the environment has none: the deploy is then one
	// pass over all targets, as before rollouts, and needs no Plan.
	Rollout *Spec `yaml:"rollout"`
}

// Parse reads a YAML document whose only keys are `targets` and `rollout`,
// strictly. An environment config with more keys should hand those two
// nodes to ParseTargets and ParseSpec instead.
func Parse(data []byte) (*Config, []Problem) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, []Problem{syntaxProblem(err)}
	}
	cfg := &Config{}
	if len(doc.Content) == 0 {
		return cfg, nil
	}
	d := newDecoder()
	d.fields(doc.Content[0], "", "the document", map[string]field{
		"targets": func(v *yaml.Node, path string) { cfg.Targets = d.targets(v, path) },
		"rollout": func(v *yaml.Node, path string) { cfg.Rollout = d.spec(v, path) },
	})
	return cfg, d.problems
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// syntaxProblem keeps the line yaml.v3 reports for a document it cannot read.
func syntaxProblem(err error) Problem {
	p := Problem{Message: err.Error()}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		p.Line, _ = strconv.Atoi(m[1])
	}
	return p
}

// ParseTargets reads the value of a `targets` key; path is that key's path
// (default "targets") and prefixes every Problem.
func ParseTargets(n *yaml.Node, path string) (Targets, []Problem) {
	path = cmp.Or(path, "targets")
	d := newDecoder()
	ts := d.targets(resolve(n), path)
	return ts, d.problems
}

// ParseSpec reads the value of a `rollout` key; path is that key's path
// (default "rollout", or e.g. "apps.checkout.environments.prod.rollout")
// and prefixes every Problem.
func ParseSpec(n *yaml.Node, path string) (*Spec, []Problem) {
	path = cmp.Or(path, "rollout")
	d := newDecoder()
	s := d.spec(resolve(n), path)
	return s, d.problems
}

// UnmarshalYAML makes yaml.Unmarshal of a struct holding a Spec as strict as
// ParseSpec; the error is Problems, with paths under "rollout".
func (s *Spec) UnmarshalYAML(n *yaml.Node) error {
	parsed, problems := ParseSpec(n, "rollout")
	if len(problems) > 0 {
		return Problems(problems)
	}
	*s = *parsed
	return nil
}

// UnmarshalYAML makes yaml.Unmarshal of a struct holding Targets as strict
// as ParseTargets; the error is Problems, with paths under "targets".
func (ts *Targets) UnmarshalYAML(n *yaml.Node) error {
	parsed, problems := ParseTargets(n, "targets")
	if len(problems) > 0 {
		return Problems(problems)
	}
	*ts = parsed
	return nil
}

// UnmarshalYAML reads 3 or "25%".
func (q *Quantity) UnmarshalYAML(n *yaml.Node) error {
	d := newDecoder()
	parsed := d.quantity(resolve(n), "")
	if len(d.problems) > 0 {
		return Problems(d.problems)
	}
	*q = parsed
	return nil
}

// MarshalYAML writes a number as a number and a percentage as "25%".
func (q Quantity) MarshalYAML() (any, error) {
	if q.Percent {
		return q.String(), nil
	}
	return q.Value, nil
}

func (d *decoder) targets(v *yaml.Node, path string) Targets {
	var ts Targets
	d.list(v, path, "targets", func(item *yaml.Node, ipath string) {
		t := Target{path: ipath, at: d.at}
		d.fields(item, ipath, "a target", map[string]field{
			"host":   func(v *yaml.Node, p string) { t.Host = d.str(v, p) },
			"labels": func(v *yaml.Node, p string) { t.Labels = d.labels(v, p) },
		})
		ts = append(ts, t)
	})
	return ts
}

// labels accepts any scalar value (canary: true as well as canary: "true")
// because selectors compare labels as text.
func (d *decoder) labels(v *yaml.Node, path string) map[string]string {
	if v.Kind != yaml.MappingNode {
		d.fail(v, path, "labels must be a mapping like {region: eu-1, az: eu-1a}, not %s", kindName(v))
		return nil
	}
	out := map[string]string{}
	for _, p := range d.pairs(v, path) {
		kpath := joinPath(path, p.key.Value)
		val := resolve(p.value)
		d.at[kpath] = pos{val.Line, val.Column}
		if isNull(val) {
			d.fail(p.key, kpath, "label %s has no value; quote it (\"\") if empty is meant", p.key.Value)
			continue
		}
		out[p.key.Value] = d.str(val, kpath)
	}
	return out
}

func (d *decoder) spec(v *yaml.Node, path string) *Spec {
	s := &Spec{root: path, at: d.at}
	d.fields(v, path, "rollout", map[string]field{
		"regions": func(v *yaml.Node, p string) { s.Regions = d.strs(v, p) },
		"waves": func(v *yaml.Node, p string) {
			d.list(v, p, "waves", func(item *yaml.Node, ip string) { s.Waves = append(s.Waves, d.wave(item, ip)) })
		},
		"max_unavailable":   func(v *yaml.Node, p string) { s.MaxUnavailable = d.quantity(v, p) },
		"on_failure":        func(v *yaml.Node, p string) { s.OnFailure = OnFailure(d.str(v, p)) },
		"approvals_between": func(v *yaml.Node, p string) { s.ApprovalsBetween = d.strs(v, p) },
		"health":            func(v *yaml.Node, p string) { s.Health = d.health(v, p) },
		"parallel":          func(v *yaml.Node, p string) { s.Parallel = d.quantity(v, p) },
		"prometheus_url":    func(v *yaml.Node, p string) { s.PrometheusURL = d.str(v, p) },
		"alertmanager_url":  func(v *yaml.Node, p string) { s.AlertmanagerURL = d.str(v, p) },
		"workflow":          func(v *yaml.Node, p string) { s.Workflow = d.str(v, p) },
		"prepare":           func(v *yaml.Node, p string) { s.Prepare = d.str(v, p) },
		"probe_workflow":    func(v *yaml.Node, p string) { s.ProbeWorkflow = d.str(v, p) },
		"queue_timeout":     func(v *yaml.Node, p string) { s.QueueTimeout = d.positive(v, p) },
		"approvals":         func(v *yaml.Node, p string) { s.Approvals = d.approvals(v, p) },
		"freezes":           func(v *yaml.Node, p string) { s.Freezes = d.freezes(v, p) },
		"protection_rule":   func(v *yaml.Node, p string) { s.ProtectionRule = d.protectionRule(v, p) },
	})
	return s
}

func (d *decoder) wave(v *yaml.Node, path string) Wave {
	var w Wave
	d.fields(v, path, "a wave", map[string]field{
		"name":             func(v *yaml.Node, p string) { w.Name = d.str(v, p) },
		"select":           func(v *yaml.Node, p string) { w.Select = d.str(v, p) },
		"by":               func(v *yaml.Node, p string) { w.By = By(d.str(v, p)) },
		"parallel_regions": func(v *yaml.Node, p string) { w.ParallelRegions = d.atLeast(v, p, 1) },
		"bake":             func(v *yaml.Node, p string) { w.Bake = d.duration(v, p) },
		"batch_bake": func(v *yaml.Node, p string) {
			bb := d.duration(v, p)
			w.BatchBake = &bb
		},
		"max_unavailable": func(v *yaml.Node, p string) { w.MaxUnavailable = d.quantity(v, p) },
		"parallel":        func(v *yaml.Node, p string) { w.Parallel = d.quantity(v, p) },
	})
	return w
}

func (d *decoder) health(v *yaml.Node, path string) *Health {
	h := &Health{}
	d.fields(v, path, "health", map[string]field{
		"interval":         func(v *yaml.Node, p string) { h.Interval = d.duration(v, p) },
		"failures_to_stop": func(v *yaml.Node, p string) { h.FailuresToStop = d.atLeast(v, p, 1) },
		"probes": func(v *yaml.Node, p string) {
			d.list(v, p, "probes", func(item *yaml.Node, ip string) { h.Probes = append(h.Probes, d.probe(item, ip)) })
		},
		"metrics": func(v *yaml.Node, p string) {
			d.list(v, p, "metrics", func(item *yaml.Node, ip string) { h.Metrics = append(h.Metrics, d.metric(item, ip)) })
		},
		"alerts": func(v *yaml.Node, p string) {
			a := &Alerts{}
			d.fields(v, p, "alerts", map[string]field{
				"block_on": func(v *yaml.Node, p string) { a.BlockOn = d.strs(v, p) },
			})
			h.Alerts = a
		},
	})
	return h
}

func (d *decoder) probe(v *yaml.Node, path string) Probe {
	var pr Probe
	d.fields(v, path, "a probe", map[string]field{
		"url":           func(v *yaml.Node, p string) { pr.URL = d.str(v, p) },
		"expect_status": func(v *yaml.Node, p string) { pr.ExpectStatus = d.atLeast(v, p, 100) },
		"from":          func(v *yaml.Node, p string) { pr.From = ProbeFrom(d.str(v, p)) },
	})
	return pr
}

func (d *decoder) metric(v *yaml.Node, path string) Metric {
	var m Metric
	d.fields(v, path, "a metric", map[string]field{
		"name":  func(v *yaml.Node, p string) { m.Name = d.str(v, p) },
		"query": func(v *yaml.Node, p string) { m.Query = d.str(v, p) },
		"max":   func(v *yaml.Node, p string) { m.Max = d.float(v, p) },
		"min":   func(v *yaml.Node, p string) { m.Min = d.float(v, p) },
	})
	return m
}
