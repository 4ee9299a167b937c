package rollbackflow_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testbin"
	"github.com/ripcord/ripcord/internal/testdb"
)

func TestRollbackCLI(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin, err := testbin.Ripcord()
	if err != nil {
		t.Fatal(err)
	}
	s := newScene(t, testdb.MigratedURL(t, "sqlite"))
	run := func(args ...string) (int, string) {
		cmd := exec.Command(bin, append([]string{"rollback", "--server", s.URL, "--token", e2etest.Token}, args...)...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	code, out := run("--app", "checkout", "--environment", "prod", "--reason", "r3 leaks memory")
	if code != 0 || !strings.Contains(out, "replaces r3:prod-eu/prod with r2:prod-eu/prod") || !strings.Contains(out, "eligible") {
		t.Fatalf("ripcord rollback: exit %d\n%s", code, out)
	}
	s.WaitFor("the rollback pull request", wait, func() bool { return len(s.GitHub.PullRequests(gitops)) == 1 })
	code, out = run("--app", "checkout", "--environment", "prod", "--reason", "again")
	if code != 0 || len(s.GitHub.PullRequests(gitops)) != 1 {
		t.Errorf("a second ripcord rollback: exit %d, %d pull requests; want 0 and still 1\n%s", code, len(s.GitHub.PullRequests(gitops)), out)
	}
	if code, out = run("--app", "checkout", "--reason", "x"); code != 2 || !strings.Contains(out, "environment") {
		t.Errorf("without --environment: exit %d %q, want 2 naming the flag", code, out)
	}
	if code, out = run("--app", "nope", "--environment", "prod", "--reason", "x"); code != 1 || !strings.Contains(out, "4") {
		t.Errorf("an unknown app: exit %d %q, want 1 with the server's 4xx", code, out)
	}
}
