package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/ripcord/ripcord/repoconfig"
)

// runValidate checks .github/ripcord.yml files: each problem is printed as
// path:line:column: message; exit 1 on any problem.
func runValidate(args []string) int {
	if len(args) == 0 {
		args = []string{".github/ripcord.yml"}
	}
	bad := false
	for _, file := range args {
		data, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintln(os.Stderr, "ripcord validate:", err)
			return 2
		}
		problems := repoconfig.Validate(file, data)
		for _, p := range problems {
			fmt.Println(p)
		}
		if len(problems) > 0 {
			bad = true
			continue
		}
		fmt.Fprintf(os.Stderr, "%s: valid\n", file)
		printStages(data)
	}
	if bad {
		return 1
	}
	return 0
}

// printStages prints each environment's rollout stages, as seed 001's
// validate does: rollout.stages: canary, eu-1/eu-1a, ...
func printStages(data []byte) {
	cfg, _ := repoconfig.Load(data)
	if cfg == nil {
		return
	}
	for _, app := range cfg.AppNames() {
		a := cfg.Apps[app]
		for _, name := range a.EnvironmentNames() {
			if plan := a.Environments[name].Plan; plan != nil {
				fmt.Printf("apps.%s.environments.%s.rollout.stages: %s\n", app, name, strings.Join(plan.StageNames(), ", "))
			}
		}
	}
}
