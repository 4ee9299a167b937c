package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestMain removes the binary the tests built, whatever their outcome.
func TestMain(m *testing.M) {
	code := m.Run()
	if builtDir != "" {
		_ = os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

// A run of these tests leaves nothing behind in the temporary folder: the
// ripcord binary the tests build (about 115 MB) goes when they end. Left
// there, every run of the package filled the disk a little more.
func TestTheBuiltBinaryIsRemovedWhenTheTestsEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if os.Getenv("RIPCORD_TEST_CHILD") != "" {
		t.Skip("already a child run")
	}
	tmp := t.TempDir()
	// This very test binary, running one test that builds ripcord, with
	// its own temporary folder.
	cmd := exec.Command(os.Args[0], "-test.run=^TestAgentRefusesToStartWithoutWhatItNeeds$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "RIPCORD_TEST_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child run: %v\n%s", err, out)
	}
	left, err := filepath.Glob(filepath.Join(tmp, "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("the child run left %v in its temporary folder", left)
	}
}
