package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

// The child run of this very test binary builds ripcord and runs it.
func TestBuiltBinaryRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin, err := Ripcord()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || len(out) == 0 {
		t.Fatalf("ripcord version: %v, %q", err, out)
	}
	again, err := Ripcord()
	if err != nil || again != bin {
		t.Errorf("second call gave %q, %v; want the same binary %q", again, err, bin)
	}
}

// A run of a package's tests through Main leaves nothing in the temporary
// folder: the binary, about 115 MB, goes when the tests end, whatever
// their outcome.
func TestMainRemovesTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if os.Getenv("TESTBIN_CHILD") != "" {
		t.Skip("already a child run")
	}
	for _, fail := range []bool{false, true} {
		tmp := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestBuiltBinaryRuns$", "-test.count=1")
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "TESTBIN_CHILD=1")
		if fail {
			// A child whose tests fail after the build.
			cmd.Args = append(cmd.Args, "-test.run=^TestBuiltBinaryRuns$|^TestChildFails$")
			cmd.Env = append(cmd.Env, "TESTBIN_FAIL=1")
		}
		out, err := cmd.CombinedOutput()
		if fail == (err == nil) {
			t.Fatalf("child run (failing: %v): %v\n%s", fail, err, out)
		}
		left, err := filepath.Glob(filepath.Join(tmp, "*"))
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 0 {
			t.Errorf("the child run (failing: %v) left %v in its temporary folder", fail, left)
		}
	}
}

// TestChildFails fails on purpose in TestMainRemovesTheBinary's child run.
func TestChildFails(t *testing.T) {
	if os.Getenv("TESTBIN_FAIL") == "" {
		t.Skip("only in TestMainRemovesTheBinary's failing child run")
	}
	t.Error("failing on purpose: the binary must be removed all the same")
}
