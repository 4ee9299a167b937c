package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/repoconfig"
)

// validateUsage says what `ripcord validate` checks and what its exit
// status means: 1 for what was validated being invalid, 2 for the command
// being used wrongly, so that CI can tell a broken config from a broken
// job.
const validateUsage = `usage: ripcord validate [--max-parallel N] [--config FILE] [FILE...]   (default .github/ripcord.yml)

Checks each file and prints each problem as path:line:column: message, and
names each RIPCORD_* environment variable that no setting or command reads
(a typo, which serve would ignore with a warning). Every file is checked,
even after one that cannot be read. For a valid file it prints each
environment's rollout stages (apps.APP.environments.ENV.rollout.stages:
canary, eu-1/eu-1a, ...), after the file's path and ": " when more than
one FILE is given.

A wave's parallel is checked against the server's rollout.max_parallel,
found as serve finds it: --max-parallel, else RIPCORD_ROLLOUT_MAX_PARALLEL,
else rollout.max_parallel in the settings file that --config or
RIPCORD_CONFIG names, else 16. Run it with the server's environment and
settings file to check against what the server allows.

Exit status: 0 when everything is valid; 1 when a file or the environment
has a problem; 2 when the command is used wrongly: an unknown flag, a bad
flag value, a settings file or rollout.max_parallel that serve would
refuse, or a FILE that cannot be read (2 wins over 1).

examples:
  ripcord validate
  ripcord validate .github/ripcord.yml ../shop/.github/ripcord.yml
  ripcord validate --config /etc/ripcord/ripcord.yml .github/ripcord.yml

flags:
`

// defaultRepoConfig is the file validate checks when it is given none.
const defaultRepoConfig = ".github/ripcord.yml"

// maxParallelKey is the server's setting that --max-parallel stands for.
const maxParallelKey = "rollout.max_parallel"

// runValidate checks .github/ripcord.yml files and the environment's
// RIPCORD_* variables: each problem is printed on stdout (a file's as
// path:line:column: message). Every file is checked before the exit
// status is decided: 2 on a bad flag or setting or a file that cannot be
// read, else 1 on any problem.
func runValidate(args []string) int {
	fs := newFlags("ripcord validate", "", "")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), validateUsage)
		fs.PrintDefaults()
	}
	flagMax := fs.Int("max-parallel", 0,
		"the server's rollout.max_parallel: no wave's parallel may ask for more (default: as serve loads it, see above)")
	fs.String("config", "", "the server's settings file, read for rollout.max_parallel (env RIPCORD_CONFIG)")
	if code, stop := parse(fs, args); stop {
		return code
	}
	if isSet(fs, "max-parallel") && *flagMax < 1 {
		fmt.Fprintln(os.Stderr, "ripcord validate: --max-parallel must be at least 1")
		return 2
	}
	server, source, err := config.LoadSetting(fs, os.Getenv, maxParallelKey, "max-parallel")
	if err != nil {
		fmt.Fprintln(os.Stderr, "ripcord validate:", err)
		return 2
	}
	maxParallel := server.Rollout.MaxParallel
	if source != "default" {
		fmt.Fprintf(os.Stderr, "ripcord validate: %s %d, from %s\n", maxParallelKey, maxParallel, source)
	}
	args = fs.Args()
	defaulted := len(args) == 0
	if defaulted {
		args = []string{defaultRepoConfig}
	}
	bad, unreadable := false, false
	for _, u := range config.CheckEnv(os.Environ()) {
		fmt.Println(u)
		bad = true
	}
	for _, file := range args {
		data, err := os.ReadFile(file)
		if err != nil {
			if defaulted && errors.Is(err, os.ErrNotExist) {
				// Said as "open .github/ripcord.yml: no such file or
				// directory", it read as if the user had named that file.
				wd, _ := os.Getwd()
				err = fmt.Errorf("no FILE given, and there is no %s in %s: name the file (ripcord validate path/to/ripcord.yml), "+
					"or run it in the repository's top folder", defaultRepoConfig, wd)
			}
			fmt.Fprintln(os.Stderr, "ripcord validate:", err)
			unreadable = true
			continue
		}
		problems := repoconfig.ValidateWith(file, data, repoconfig.Options{MaxParallel: maxParallel})
		for _, p := range problems {
			fmt.Println(p)
		}
		if len(problems) > 0 {
			bad = true
			continue
		}
		fmt.Fprintf(os.Stderr, "%s: valid\n", file)
		// A problem names its file; a stage line names it too when there
		// is more than one file to tell apart.
		prefix := ""
		if len(args) > 1 {
			prefix = file + ": "
		}
		printStages(prefix, data)
	}
	switch {
	case unreadable:
		return 2
	case bad:
		return 1
	}
	return 0
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// printStages prints each environment's rollout stages, as seed 001's
// validate does: rollout.stages: canary, eu-1/eu-1a, ..., each line after
// prefix (the file's path and ": " when several files are checked, so that
// a line says which file it is about and grep finds a file's lines).
func printStages(prefix string, data []byte) {
	cfg, _ := repoconfig.Load(data)
	if cfg == nil {
		return
	}
	for _, app := range cfg.AppNames() {
		a := cfg.Apps[app]
		for _, name := range a.EnvironmentNames() {
			if plan := a.Environments[name].Plan; plan != nil {
				fmt.Printf("%sapps.%s.environments.%s.rollout.stages: %s\n", prefix, app, name, strings.Join(plan.StageNames(), ", "))
			}
		}
	}
}
