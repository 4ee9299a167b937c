package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/testbin"
)

// `ripcord validate` with no FILE, run where there is no
// .github/ripcord.yml, says that it looked for that default and where: it
// said "open .github/ripcord.yml: no such file or directory", as if the
// user had named a file, leaving a newcomer who ran the README's bare
// command outside a repository to guess why.
func TestValidateWithoutFileSaysWhereItLookedForTheDefault(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin, err := testbin.Ripcord()
	if err != nil {
		t.Fatal(err)
	}
	validate := func(dir string, args ...string) (int, string) {
		cmd := exec.Command(bin, append([]string{"validate"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "RIPCORD_CONFIG=", "RIPCORD_ROLLOUT_MAX_PARALLEL=")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, stderr.String()
	}
	dir := t.TempDir()
	code, stderr := validate(dir)
	want := "ripcord validate: no FILE given, and there is no .github/ripcord.yml in " + dir + ": name the file"
	if code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("no FILE, no default: exit %d, stderr %q; want 2 and %q", code, stderr, want)
	}
	// A file the user named is reported as before, by its name.
	if code, stderr := validate(dir, "nosuch.yml"); code != 2 || !strings.Contains(stderr, "open nosuch.yml: no such file or directory") || strings.Contains(stderr, "no FILE given") {
		t.Errorf("a named file that is not there: exit %d, stderr %q; want 2 and the file's own error", code, stderr)
	}
	// Where the default is, it is checked.
	if err := os.MkdirAll(filepath.Join(dir, ".github"), 0o755); err != nil {
		t.Fatal(err)
	}
	yml := "version: 1\napps:\n  checkout:\n    environments:\n      prod:\n        cluster: prod-eu\n"
	if err := os.WriteFile(filepath.Join(dir, ".github", "ripcord.yml"), []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, stderr := validate(dir); code != 0 || !strings.Contains(stderr, ".github/ripcord.yml: valid") {
		t.Errorf("the default present: exit %d, stderr %q; want 0 and valid", code, stderr)
	}
}
