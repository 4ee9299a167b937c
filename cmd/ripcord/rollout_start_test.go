package main

import (
	"strings"
	"testing"
)

// `rollout start` for an environment with no release yet is told which
// flag gives what the server cannot find, as `rollback` is: the answer
// named only the request body's field ("repository: required, no earlier
// release of checkout in prod names one (field repository)").
func TestRolloutStartNamesTheFlagForWhatNoReleaseNames(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	env := []string{"RIPCORD_SERVER=" + inProcessServer(t), "RIPCORD_API_TOKEN=cli-token"}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"rollout", "start", "--app", "checkout", "--environment", "prod", "--version", "v42"},
			`or --repository to ripcord rollout start (field repository)`},
		{[]string{"rollout", "start", "--app", "checkout", "--environment", "prod", "--version", "v42", "--repository", "acme/checkout"},
			`or --cluster to ripcord rollout start (field cluster)`},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, stdout, stderr := ripcord(t, env, c.args...)
			if code != 1 || !strings.Contains(stderr, "server answered 400") || !strings.Contains(stderr, c.says) {
				t.Errorf("exit %d, stderr %q; want 1, the 400 and %q\nstdout: %s", code, stderr, c.says, stdout)
			}
		})
	}
}
