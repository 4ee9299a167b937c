package repoconfig

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/ripcord/ripcord/rollout"
)

// planRollouts plans every environment's `rollout:` over its `targets:` with
// the wave planner, so a file whose waves cannot be planned is invalid like any
// other; a valid plan is kept on the environment.
func planRollouts(cfg *Config, opts Options) []Problem {
	var problems []Problem
	for _, app := range cfg.AppNames() {
		a := cfg.Apps[app]
		for _, name := range a.EnvironmentNames() {
			env := a.Environments[name]
			path := fmt.Sprintf("apps.%s.environments.%s", app, name)
			ps := environmentProtection(env, path)
			if env.Rollout != nil && len(ps) == 0 {
				ps = planRollout(env, path, cmp.Or(opts.MaxParallel, rollout.DefaultMaxParallel))
			}
			for _, p := range ps {
				problems = append(problems, Problem{Path: p.Path, Line: p.Line, Column: p.Column, Message: p.Message})
			}
		}
	}
	return problems
}

// environmentProtection reads the environment's own freezes, protection
// rule and target regions, which apply with or without a rollout. A
// freeze's regions must be those of the environment's targets: a freeze
// holds a stage or a deployment by its targets' regions, so one naming a
// region no target is in (a typo, eu-wset) would never hold anything.
func environmentProtection(env *Environment, path string) []rollout.Problem {
	var ps []rollout.Problem
	var targets rollout.Targets
	targetsRead := true
	if env.Targets != nil {
		var tp []rollout.Problem
		targets, tp = rollout.ParseTargets(env.Targets, path+".targets")
		ps = append(ps, tp...)
		// Regions of targets that did not read are no ground to refuse a
		// freeze on: the targets' own problems say what to fix.
		targetsRead = len(tp) == 0
		seen := map[string]bool{}
		for _, t := range targets {
			if r := t.Labels[rollout.LabelRegion]; r != "" && !seen[r] {
				seen[r] = true
				env.Regions = append(env.Regions, r)
			}
		}
		slices.Sort(env.Regions)
	}
	if env.freezes != nil {
		var fs []rollout.Freeze
		var fp []rollout.Problem
		if targetsRead {
			fs, fp = rollout.ParseEnvironmentFreezes(env.freezes, path+".freezes", targets)
		} else {
			fs, fp = rollout.ParseFreezes(env.freezes, path+".freezes")
		}
		env.Freezes, ps = fs, append(ps, fp...)
	}
	if env.protectionRule != nil {
		r, rp := rollout.ParseProtectionRule(env.protectionRule, path+".protection_rule")
		if r != nil {
			env.ProtectionRule = *r
		}
		ps = append(ps, rp...)
	}
	return ps
}

// planRollout plans the environment's rollout over its targets; the
// environment's freezes and protection rule join the rollout's own.
func planRollout(env *Environment, path string, maxParallel int) []rollout.Problem {
	if env.Targets == nil {
		return []rollout.Problem{{Path: path + ".rollout", Line: env.Rollout.Line, Column: env.Rollout.Column,
			Message: "a rollout needs targets: add a targets list beside it, e.g. targets: [{host: web-1, labels: {region: eu-1}}]"}}
	}
	targets, tp := rollout.ParseTargets(env.Targets, path+".targets")
	spec, sp := rollout.ParseSpec(env.Rollout, path+".rollout")
	if ps := append(tp, sp...); len(ps) > 0 {
		return ps
	}
	plan, ps := rollout.NewPlan(spec, targets, rollout.PlanOptions{
		MaxParallel: maxParallel, RollbackEnabled: env.Rollback.Mode != ""})
	if plan != nil {
		plan.Freezes = append(slices.Clone(env.Freezes), plan.Freezes...)
		if env.ProtectionRule.Enabled {
			plan.ProtectionRule = env.ProtectionRule
		} else if plan.ProtectionRule.Enabled {
			env.ProtectionRule = plan.ProtectionRule
		}
	}
	env.Plan = plan
	return ps
}
