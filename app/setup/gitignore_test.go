package setup

import (
	"errors"
	"os/exec"
	"testing"
)

// The key file `ripcord serve` makes beside ripcord.db (`make run` in a
// clone: the repository's root) would let whoever reads the repository
// open the stored App's secrets: git must ignore it wherever it is made.
func TestGitIgnoresTheSecretsKeyFile(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs the git binary: not found")
	}
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skip("needs a git checkout of the repository (a copy without .git cannot be asked)")
	}
	dir := string(root[:len(root)-1])
	for _, path := range []string{KeyFileName, "data/" + KeyFileName} {
		cmd := exec.Command("git", "-C", dir, "check-ignore", "-q", "--no-index", path)
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit) && exit.ExitCode() == 1:
			t.Errorf("git does not ignore %s: a secrets key made there could be committed", path)
		default:
			t.Fatalf("git check-ignore %s: %v", path, err)
		}
	}
}
