package main

import (
	"strings"
	"testing"
)

// A command that takes one id says whether it was missing or which
// argument was one too many, before its usage line: the usage line alone
// left `releases show` without an id, and `rollout abort ro-1 a fix
// --user octocat`, to be worked out from the synopsis.
func TestOneArgumentCommandsSayWhatIsWrong(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	noToken := []string{"RIPCORD_SERVER=http://127.0.0.1:1", "RIPCORD_API_TOKEN=", "RIPCORD_CLUSTER_TOKEN="}
	cases := []struct {
		args      []string
		want, use string
	}{
		{[]string{"releases", "show"}, "ripcord releases show: RELEASE_ID is required",
			"usage: ripcord releases show RELEASE_ID [flags]"},
		{[]string{"releases", "audit", "checkout-v42:prod-eu/prod", "extra", "--json"},
			`ripcord releases audit: unexpected argument "extra"; it takes one RELEASE_ID (a value with spaces needs quotes)`,
			"usage: ripcord releases audit RELEASE_ID [flags]"},
		{[]string{"rollout", "status"}, "ripcord rollout status: ROLLOUT_ID (or --release-id) is required",
			"usage: ripcord rollout status ROLLOUT_ID | --release-id RELEASE_ID"},
		{[]string{"rollout", "approve", "--user", "octocat"}, "ripcord rollout approve: ROLLOUT_ID is required",
			"usage: ripcord rollout approve ROLLOUT_ID --user LOGIN [--reject]"},
		{[]string{"rollout", "abort", "ro-1", "a", "fix", "--user", "octocat"},
			`ripcord rollout abort: unexpected argument "a"; it takes one ROLLOUT_ID (a value with spaces needs quotes)`,
			"usage: ripcord rollout abort ROLLOUT_ID --user LOGIN [--reason WHY]"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, stderr := ripcord(t, noToken, c.args...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != 2 || len(lines) != 2 || lines[0] != c.want || lines[1] != c.use {
				t.Errorf("exit %d, stderr %q; want 2 and\n%s\n%s", code, stderr, c.want, c.use)
			}
		})
	}
}

// A command that takes no arguments says so in one line naming the stray
// one: serve, migrate and agent said only "unexpected argument", and left
// whoever typed `ripcord serve ripcord.db` to guess that the database is a
// flag.
func TestCommandsWithoutArgumentsSayTheyTakeNone(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	noToken := []string{"RIPCORD_SERVER=http://127.0.0.1:1", "RIPCORD_API_TOKEN=", "RIPCORD_CLUSTER_TOKEN="}
	withFlags := "; it takes no arguments (flags start with --, and a value with spaces needs quotes)"
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "ripcord.db"}, `ripcord serve: unexpected argument "ripcord.db"` + withFlags},
		{[]string{"migrate", "--log-level", "info", "now"}, `ripcord migrate: unexpected argument "now"` + withFlags},
		{[]string{"agent", "--cluster", "prod-eu", "prod-us"}, `ripcord agent: unexpected argument "prod-us"` + withFlags},
		{[]string{"releases", "list", "checkout"}, `ripcord releases list: unexpected argument "checkout"` + withFlags},
		{[]string{"version", "extra"}, `ripcord version: unexpected argument "extra"; it takes no arguments (nor flags)`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, stdout, stderr := ripcord(t, noToken, c.args...)
			if code != 2 || strings.TrimSpace(stderr) != c.want || stdout != "" {
				t.Errorf("exit %d, stderr %q, stdout %q; want 2 and the one line\n%s", code, stderr, stdout, c.want)
			}
		})
	}
}
