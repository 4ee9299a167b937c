package testbin

import (
	"bufio"
	"fmt"
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

// A run killed (by go test's -timeout, or a signal) never reaches the end
// of Main and leaves its binary; the next run's build removes it (its
// process is gone), while its own stays until its own end.
func TestABuildRemovesWhatAKilledRunLeft(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if os.Getenv("TESTBIN_CHILD") != "" {
		t.Skip("already a child run")
	}
	tmp := t.TempDir()
	env := append(os.Environ(), "TMPDIR="+tmp, "TESTBIN_CHILD=1")

	// The first child builds the binary, says so, and is killed then: not
	// at a fixed timeout, which on a loaded machine could fall during its
	// build and leave a go build running into the folder (CI, 2026-12-03).
	hang := exec.Command(os.Args[0], "-test.count=1", "-test.run=^TestChildHangs$", "-test.timeout=10m")
	hang.Env = append(env, "TESTBIN_HANG=1")
	hang.Stderr = os.Stderr
	stdout, err := hang.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := hang.Start(); err != nil {
		t.Fatal(err)
	}
	built := false
	for sc := bufio.NewScanner(stdout); !built && sc.Scan(); {
		built = sc.Text() == childBuilt
	}
	_ = hang.Process.Kill()
	_ = hang.Wait()
	if !built {
		t.Fatal("the hanging child run ended without building the binary")
	}
	left, err := filepath.Glob(filepath.Join(tmp, "ripcord-bin-*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 {
		t.Fatalf("the killed run left %v, want its one folder (the test shows nothing otherwise)", left)
	}

	next := exec.Command(os.Args[0], "-test.count=1", "-test.run=^TestBuiltBinaryRuns$")
	next.Env = env
	if out, err := next.CombinedOutput(); err != nil {
		t.Fatalf("the next child run: %v\n%s", err, out)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
		t.Errorf("after the next run the temporary folder still holds %v", left)
	}
}

// childBuilt is the line TestChildHangs writes once the binary is built.
const childBuilt = "testbin: built"

// TestChildHangs builds the binary, says so, and then waits to be killed,
// in TestABuildRemovesWhatAKilledRunLeft's child.
func TestChildHangs(t *testing.T) {
	if os.Getenv("TESTBIN_HANG") == "" {
		t.Skip("only in TestABuildRemovesWhatAKilledRunLeft's first child run")
	}
	if _, err := Ripcord(); err != nil {
		t.Fatal(err)
	}
	fmt.Println(childBuilt)
	select {}
}
