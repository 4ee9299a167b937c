package main

import (
	"strings"
	"testing"
)

// `rollout approve` and `rollout abort` without --user say that --user is
// required and whom it names, as `rollback` says what it misses, instead
// of a usage line that leaves the reader to find what is wrong.
func TestRolloutVoteAndAbortSayUserIsRequired(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	env := []string{"RIPCORD_SERVER=" + inProcessServer(t), "RIPCORD_API_TOKEN=cli-token"}
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"approve", []string{"rollout", "approve", "ro-0123456789"}, "ripcord rollout approve: --user is required: the GitHub login of who approves"},
		{"approve with a blank user", []string{"rollout", "approve", "--user", " ", "ro-0123456789"}, "ripcord rollout approve: --user is required"},
		{"reject", []string{"rollout", "approve", "--reject", "ro-0123456789"}, "ripcord rollout approve: --user is required"},
		{"abort", []string{"rollout", "abort", "--reason", "pager", "ro-0123456789"}, "ripcord rollout abort: --user is required: the GitHub login of who aborts"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := ripcord(t, env, c.args...)
			if code != 2 || !strings.Contains(stderr, c.says) {
				t.Errorf("ripcord %s: exit %d, stderr %q; want 2 and %q\nstdout: %s", strings.Join(c.args, " "), code, stderr, c.says, stdout)
			}
		})
	}
}
