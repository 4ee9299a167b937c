package repoconfig

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Path is where ripcord reads the config in a repository.
const Path = ".github/ripcord.yml"

// Version is the only config version there is.
const Version = 1

var (
	topKeys         = []string{"version", "apps", "recovery", "commands", "eligibility", "stall_after"}
	appKeys         = []string{"environments", "gates", "recovery"}
	environmentKeys = []string{"cluster", "workflows", "rollback", "rollout", "targets", "gates", "freezes", "protection_rule", "oidc"}

	// clusterPattern keeps cluster names usable in release ids
	// (<chain-id>:<cluster>/<env>) and in /api/v1/facts/{cluster}.
	clusterPattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)
)

// Options are the server's side of a config: what a file is checked
// against beyond its own content.
type Options struct {
	// MaxParallel is the server's rollout.max_parallel: no wave's parallel
	// may ask for more. Zero is rollout.DefaultMaxParallel.
	MaxParallel int
}

// Load parses and validates a config file. It returns the config with
// defaults applied, or nil and every problem found, in file order.
func Load(data []byte) (*Config, []Problem) { return LoadWith(data, Options{}) }

// LoadWith is Load against a server's options.
func LoadWith(data []byte, opts Options) (*Config, []Problem) {
	root, p := parseDocument(data)
	if p != nil {
		return nil, []Problem{*p}
	}
	d := &decoder{}
	cfg, top := d.config(root)
	applyDefaults(cfg, top)
	d.checkMerged(cfg, top)
	if len(d.problems) == 0 {
		d.problems = planRollouts(cfg, opts)
	}
	if len(d.problems) > 0 {
		sortProblems(d.problems)
		return nil, d.problems
	}
	cfg.text = string(data)
	return cfg, nil
}

// Validate checks a config file and returns its problems as
// `file:line:column: path: message` lines, none when it is valid.
func Validate(file string, data []byte) []string { return ValidateWith(file, data, Options{}) }

// ValidateWith is Validate against a server's options.
func ValidateWith(file string, data []byte, opts Options) []string {
	_, problems := LoadWith(data, opts)
	out := make([]string, 0, len(problems))
	for _, p := range problems {
		out = append(out, p.Format(file))
	}
	return out
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseDocument returns the root node of the only document in data.
func parseDocument(data []byte) (*yaml.Node, *Problem) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Problem{Line: 1, Column: 1, Message: "the file is empty; it needs at least `version: 1`"}
		}
		return nil, syntaxProblem(err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		return nil, &Problem{Line: next.Line, Column: next.Column, Message: "only one YAML document is allowed; remove the second ---"}
	} else if !errors.Is(err, io.EOF) {
		return nil, syntaxProblem(err)
	}
	if len(doc.Content) == 0 {
		return nil, &Problem{Line: 1, Column: 1, Message: "the file is empty; it needs at least `version: 1`"}
	}
	return resolve(doc.Content[0]), nil
}

// syntaxProblem places a YAML syntax error; yaml.v3 reports the line only,
// so the column is left 0 and printed as 1.
func syntaxProblem(err error) *Problem {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Problem{Line: line, Message: "invalid YAML: " + m[2]}
	}
	return &Problem{Message: "invalid YAML: " + err.Error()}
}

func (d *decoder) config(root *yaml.Node) (*Config, *RecoveryOverride) {
	cfg := &Config{Apps: map[string]*App{}}
	var top *RecoveryOverride
	m, ok := d.fields(root, "", topKeys...)
	if !ok {
		return cfg, nil
	}
	d.require(root, "", m, "version")
	if v, ok := m["version"]; ok {
		if n, ok := wholeNumber(v.Value); !ok || n != Version {
			d.problemf(v.Value, v.Path, "must be %d, not %s", Version, kindName(v.Value))
		} else {
			cfg.Version = Version
		}
	}
	if v, ok := m["apps"]; ok {
		d.apps(v, cfg)
	}
	if v, ok := m["recovery"]; ok {
		top = d.recovery(v)
	}
	if v, ok := m["commands"]; ok {
		cfg.Commands = d.commands(v)
	}
	if v, ok := m["eligibility"]; ok {
		if em, ok := d.fields(v.Value, v.Path, "window"); ok {
			if w, ok := em["window"]; ok {
				cfg.Eligibility.Window, _ = d.integer(w, 1, maxEligibilityWindow)
			}
		}
	}
	if v, ok := m["stall_after"]; ok {
		cfg.StallAfter, _ = d.duration(v, true)
	}
	return cfg, top
}

func (d *decoder) apps(f field, cfg *Config) {
	entries, _ := d.entries(f.Value, f.Path)
	for _, e := range entries {
		app := &App{Name: e.Name, Environments: map[string]*Environment{}}
		cfg.Apps[e.Name] = app
		cfg.appOrder = append(cfg.appOrder, e.Name)
		m, ok := d.fields(e.Value, e.Path, appKeys...)
		if !ok {
			continue
		}
		if v, ok := m["environments"]; ok {
			envs, _ := d.entries(v.Value, v.Path)
			for _, ev := range envs {
				app.Environments[ev.Name] = d.environment(ev)
				app.envOrder = append(app.envOrder, ev.Name)
			}
		}
		if v, ok := m["gates"]; ok {
			app.Gates = d.gates(v)
		}
		if v, ok := m["recovery"]; ok {
			app.Recovery = d.recovery(v)
		}
	}
}

func (d *decoder) environment(f field) *Environment {
	env := &Environment{Name: f.Name}
	m, ok := d.fields(f.Value, f.Path, environmentKeys...)
	if !ok {
		return env
	}
	if v, ok := m["cluster"]; ok {
		env.Cluster, _ = d.match(v, clusterPattern, "a cluster name (letters, digits, '.', '_', '-')")
	}
	if v, ok := m["workflows"]; ok {
		env.Workflows = d.strings(v, func(item field) (string, bool) {
			return d.match(item, workflowFilePattern, "a workflow file name like deploy.yml")
		})
	}
	if v, ok := m["rollback"]; ok {
		env.Rollback = d.rollback(v)
	}
	if v, ok := m["rollout"]; ok {
		if v.Value.Kind != yaml.MappingNode {
			d.problemf(v.Value, v.Path, "must be a mapping (the rollout spec), not %s", kindName(v.Value))
		} else {
			env.Rollout = v.Value
		}
	}
	if v, ok := m["targets"]; ok {
		if v.Value.Kind != yaml.SequenceNode {
			d.problemf(v.Value, v.Path, "must be a list of targets, not %s", kindName(v.Value))
		} else {
			env.Targets = v.Value
		}
	}
	if v, ok := m["gates"]; ok {
		env.Gates = d.gates(v)
	}
	if v, ok := m["freezes"]; ok {
		env.freezes = v.Value
	}
	if v, ok := m["protection_rule"]; ok {
		env.protectionRule = v.Value
	}
	if v, ok := m["oidc"]; ok {
		env.OIDC = d.oidcRule(v)
	}
	return env
}

// checkMerged reports problems only visible once sections are combined.
func (d *decoder) checkMerged(cfg *Config, top *RecoveryOverride) {
	if top != nil {
		d.checkRecovery(cfg.Recovery, top)
	}
	for _, name := range cfg.appOrder {
		if a := cfg.Apps[name]; a.Recovery != nil {
			d.checkRecovery(cfg.RecoveryFor(name), a.Recovery)
		}
	}
}
