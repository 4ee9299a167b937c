package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ripcord/ripcord/internal/testbin"
	"github.com/ripcord/ripcord/internal/testdb"
)

// misspelt are RIPCORD_* variables an operator writes by mistake, each with
// the one meant: the key and the flag of the webhook secrets are plural,
// the variable is not.
var misspelt = map[string]string{
	"RIPCORD_GITHUB_WEBHOOK_SECRETS": "RIPCORD_GITHUB_WEBHOOK_SECRET",
	"RIPCORD_DATABSE":                "RIPCORD_DATABASE",
}

// knownAndExempt sets variables that must not be warned about: another
// command's, and the tests' own (with-postgres.sh exports
// RIPCORD_TEST_POSTGRES to every test that runs the binary).
func knownAndExempt(t *testing.T) {
	t.Setenv("RIPCORD_SERVER", "http://127.0.0.1:1")
	if os.Getenv(testdb.PostgresEnv) == "" {
		t.Setenv(testdb.PostgresEnv, "postgres://unused@127.0.0.1:1/none")
	}
}

// checkWarnings checks that output has one warning line per variable of
// want (misspelt name → the variable meant), each from the logger as from
// says (a line from(l) holds), naming it and the variable meant, and no
// other warning.
func checkWarnings(t *testing.T, output string, want map[string]string, from func(line string) bool) {
	t.Helper()
	var warnings []string
	for _, l := range strings.Split(output, "\n") {
		if strings.Contains(l, "is not a ripcord setting") {
			warnings = append(warnings, l)
		}
	}
	if len(warnings) != len(want) {
		t.Errorf("%d warnings, want one per misspelt variable (%d):\n%s", len(warnings), len(want), output)
	}
	for name, meant := range want {
		found := false
		for _, l := range warnings {
			if from(l) && strings.Contains(l, name+" ") && strings.Contains(l, "did you mean "+meant+"?") {
				found = true
			}
		}
		if !found {
			t.Errorf("no warning line names %s and suggests %s:\n%s", name, meant, output)
		}
	}
}

// prefixed is a line starting with prefix.
func prefixed(prefix string) func(string) bool {
	return func(l string) bool { return strings.HasPrefix(l, prefix) }
}

// A misspelt variable left in a unit file no longer passes unnoticed, and
// does not take the server down either: serve starts, ready, and warns
// once per variable.
func TestServeWarnsAboutUnknownVariablesAndStarts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server as a child process")
	}
	bin, err := testbin.Ripcord()
	if err != nil {
		t.Fatal(err)
	}
	for name := range misspelt {
		t.Setenv(name, "sqlite://typo.db")
	}
	knownAndExempt(t)
	c := startChild(t, bin, "sqlite://"+filepath.Join(t.TempDir(), "ripcord.db"))
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("serve did not stop cleanly: %v\n%s", err, c.logs.String())
	}
	checkWarnings(t, c.logs.String(), misspelt, prefixed("time="))
	for _, l := range strings.Split(c.logs.String(), "\n") {
		if strings.Contains(l, "is not a ripcord setting") && !strings.Contains(l, "level=WARN") {
			t.Errorf("not a warning: %s", l)
		}
	}
}

// migrate loads the same configuration, so it warns the same way.
func TestMigrateWarnsAboutUnknownVariables(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	knownAndExempt(t)
	env := []string{"RIPCORD_DATABASE=sqlite://" + filepath.Join(t.TempDir(), "ripcord.db")}
	for name := range misspelt {
		env = append(env, name+"=x")
	}
	code, out, errOut := ripcord(t, env, "migrate")
	if code != 0 || !strings.Contains(out, "schema version") {
		t.Fatalf("ripcord migrate: exit %d\n%s\n%s", code, out, errOut)
	}
	checkWarnings(t, errOut, misspelt, prefixed("ripcord migrate: warning: "))
}
