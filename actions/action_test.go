package actions

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

func TestActionMetadata(t *testing.T) {
	t.Parallel()
	a := loadAction(t)
	if a.Name == "" || a.Description == "" {
		t.Error("action.yml needs a name and a description (the Marketplace shows them)")
	}
	if a.Runs.Using != "composite" {
		t.Errorf("runs.using = %q, want composite: nothing is built when the action is used", a.Runs.Using)
	}
	step := a.Runs.Steps[0]
	if step.ID != "post" || step.Shell != "bash" {
		t.Errorf("step id %q shell %q, want post / bash", step.ID, step.Shell)
	}
	script := "$GITHUB_ACTION_PATH/actions/fact/post-fact.sh"
	if !strings.Contains(step.Run, script) || strings.Contains(step.Run, "go ") {
		t.Errorf("run = %q, want it to run %s and build nothing", step.Run, script)
	}

	wantInputs := []string{"app", "audience", "cluster", "environment", "fail-on-error", "failure-type",
		"image", "mode", "probes", "reading", "release-id", "rollout-id", "server", "status", "timeout", "version"}
	var names []string
	for name, in := range a.Inputs {
		names = append(names, name)
		if strings.TrimSpace(in.Description) == "" {
			t.Errorf("input %s has no description", name)
		}
		if !in.Required && in.Default == nil {
			t.Errorf("optional input %s has no default", name)
		}
	}
	sort.Strings(names)
	if !slices.Equal(names, wantInputs) {
		t.Errorf("inputs = %v, want %v", names, wantInputs)
	}
	// Inputs only one mode needs are checked by the script (a missing
	// one is refused with its name), not declared required for both.
	for name, in := range a.Inputs {
		if in.Required != (name == "server") {
			t.Errorf("input %s required = %v; only server is needed in every mode", name, in.Required)
		}
	}
	for name, want := range map[string]string{"fail-on-error": "false", "timeout": "10", "audience": "", "mode": "fact"} {
		if d := a.Inputs[name].Default; d == nil || *d != want {
			t.Errorf("input %s default = %v, want %q", name, d, want)
		}
	}
}

// Composite actions get no INPUT_* variables: every input must be passed in
// the step's env under the name the script reads, and nothing else.
func TestEveryInputReachesTheScript(t *testing.T) {
	t.Parallel()
	a := loadAction(t)
	env := a.Runs.Steps[0].Env
	for name := range a.Inputs {
		key := "INPUT_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		if got, want := env[key], "${{ inputs."+name+" }}"; got != want {
			t.Errorf("env %s = %q, want %q", key, got, want)
		}
	}
	if len(env) != len(a.Inputs) {
		t.Errorf("env has %d entries for %d inputs", len(env), len(a.Inputs))
	}
	var raw []byte
	for _, script := range []string{"post-fact.sh", "probe.sh"} {
		b, err := os.ReadFile(filepath.Join(repoRoot(t), "actions", "fact", script))
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, b...)
	}
	for _, read := range regexp.MustCompile(`INPUT_[A-Z_]+`).FindAllString(string(raw), -1) {
		if _, ok := env[read]; !ok {
			t.Errorf("post-fact.sh reads %s, which action.yml never sets", read)
		}
	}
	for name, out := range a.Outputs {
		if want := "${{ steps.post.outputs." + name + " }}"; out.Value != want || out.Description == "" {
			t.Errorf("output %s = %q (description %q), want value %q and a description", name, out.Value, out.Description, want)
		}
		if !strings.Contains(string(raw), "set_output "+name+" ") {
			t.Errorf("output %s is never set by the scripts", name)
		}
	}
	for _, name := range []string{"fact-id", "outcome", "state"} {
		if _, ok := a.Outputs[name]; !ok {
			t.Errorf("output %s is missing", name)
		}
	}
}

// shellcheck catches the quoting slips bash tests can miss. It is a Debian
// package (shellcheck); without it this test is skipped, not passed.
func TestScriptPassesShellcheck(t *testing.T) {
	t.Parallel()
	path, err := exec.LookPath("shellcheck")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("shellcheck is not installed: .ci/run installs it (apt-get install shellcheck)")
		}
		t.Skip("shellcheck is not installed (apt-get install shellcheck)")
	}
	// -x follows post-fact.sh's source of probe.sh, from the repository root.
	cmd := exec.Command(path, "-x", filepath.Join("actions", "fact", "post-fact.sh"), filepath.Join("actions", "fact", "probe.sh"))
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}
