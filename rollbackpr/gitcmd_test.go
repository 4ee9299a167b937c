package rollbackpr_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// git runs the real git binary in dir with a clean, predictable environment.
func git(t *testing.T, dir, stdin string, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("these tests check names and trailers with the real git binary: %v", err)
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+t.TempDir(),
		"GIT_AUTHOR_NAME=ripcord test", "GIT_AUTHOR_EMAIL=test@ripcord.invalid",
		"GIT_COMMITTER_NAME=ripcord test", "GIT_COMMITTER_EMAIL=test@ripcord.invalid",
	)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), &gitError{args: args, err: err, stderr: errOut.String()}
	}
	return out.String(), nil
}

type gitError struct {
	args   []string
	err    error
	stderr string
}

func (e *gitError) Error() string {
	return "git " + strings.Join(e.args, " ") + ": " + e.err.Error() + ": " + e.stderr
}

// gitTrailers parses the output of `git interpret-trailers --parse` or
// `git log --format=%(trailers:only,unfold)` into a map.
func gitTrailers(t *testing.T, out string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("git printed a line that is not a trailer: %q", line)
		}
		got[k] = v
	}
	return got
}
