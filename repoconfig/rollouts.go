package repoconfig

import (
	"fmt"

	"github.com/ripcord/ripcord/rollout"
)

// planRollouts plans every environment's `rollout:` over its `targets:` with
// the wave planner, so a file whose waves cannot be planned is invalid like any
// other; a valid plan is kept on the environment.
func planRollouts(cfg *Config) []Problem {
	var problems []Problem
	for _, app := range cfg.AppNames() {
		a := cfg.Apps[app]
		for _, name := range a.EnvironmentNames() {
			env := a.Environments[name]
			if env.Rollout == nil {
				continue
			}
			path := fmt.Sprintf("apps.%s.environments.%s", app, name)
			var ps []rollout.Problem
			targets, tp := rollout.ParseTargets(env.Targets, path+".targets")
			spec, sp := rollout.ParseSpec(env.Rollout, path+".rollout")
			ps = append(append(ps, tp...), sp...)
			if len(ps) == 0 {
				var planProblems []rollout.Problem
				env.Plan, planProblems = rollout.NewPlan(spec, targets, rollout.PlanOptions{
					MaxParallel: rollout.DefaultMaxParallel, RollbackEnabled: env.Rollback.Mode != ""})
				ps = planProblems
			}
			for _, p := range ps {
				problems = append(problems, Problem{Path: p.Path, Line: p.Line, Column: p.Column, Message: p.Message})
			}
		}
	}
	return problems
}
