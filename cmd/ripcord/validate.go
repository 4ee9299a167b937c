package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/ripcord/ripcord/repoconfig"
	"github.com/ripcord/ripcord/rollout"
)

// runValidate checks .github/ripcord.yml files: each problem is printed as
// path:line:column: message; exit 1 on any problem.
func runValidate(args []string) int {
	fs := newFlags("ripcord validate", "[--max-parallel N] [FILE...]   (default .github/ripcord.yml)")
	maxParallel := fs.Int("max-parallel", rollout.DefaultMaxParallel,
		"the server's rollout.max_parallel: no wave's parallel may ask for more")
	if code, stop := parse(fs, args); stop {
		return code
	}
	if *maxParallel < 1 {
		fmt.Fprintln(os.Stderr, "ripcord validate: --max-parallel must be at least 1")
		return 2
	}
	args = fs.Args()
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
		problems := repoconfig.ValidateWith(file, data, repoconfig.Options{MaxParallel: *maxParallel})
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
