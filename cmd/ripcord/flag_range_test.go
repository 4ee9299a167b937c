package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A flag with a valid range is checked by the command, naming the flag,
// before any request: `releases list
// --limit 0` was sent and refused by the server, the agent used a
// negative --min-healthy or health timeout as given, and `ripcord fact`
// sent a negative generation or step for the server to refuse, or a task
// fact without --file.
func TestFlagsOutOfRangeAreRefusedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, `{"error":"no request was expected"}`, http.StatusTeapot)
	}))
	defer srv.Close()
	env := []string{"RIPCORD_SERVER=" + srv.URL, "RIPCORD_API_TOKEN=t", "RIPCORD_CLUSTER_TOKEN=t"}
	noToken := []string{"RIPCORD_SERVER=" + srv.URL, "RIPCORD_API_TOKEN=", "RIPCORD_CLUSTER_TOKEN="}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"releases", "list", "--limit", "0"}, "ripcord releases list: --limit must be from 1 to 1000, not 0"},
		{[]string{"releases", "list", "--limit", "1001", "--app", "checkout"}, "ripcord releases list: --limit must be from 1 to 1000, not 1001"},
		{[]string{"releases", "audit", "checkout-v42:prod-eu/prod", "--limit", "-5"}, "ripcord releases audit: --limit must be from 1 to 1000, not -5"},
		{[]string{"rollout", "list", "--app", "checkout", "--environment", "prod", "--limit", "101"}, "ripcord rollout list: --limit must be from 1 to 100, not 101"},
		{[]string{"agent", "--min-healthy", "-1"}, "ripcord agent: --min-healthy must not be negative, not -1"},
		{[]string{"agent", "--health-timeout", "-30s"}, "ripcord agent: --health-timeout must not be negative, not -30s"},
		{[]string{"agent", "--spool-max", "-1"}, "ripcord agent: --spool-max must not be negative, not -1"},
		{[]string{"agent", "--health-port", "70000"}, "ripcord agent: --health-port must be from 0 to 65535, not 70000"},
		{[]string{"fact", "--cluster", "prod-eu", "--name", "checkout", "--generation", "-3"}, "ripcord fact: --generation must not be negative, not -3"},
		{[]string{"fact", "--cluster", "prod-eu", "--name", "checkout", "--generation", "3", "--observed-generation", "-1"}, "ripcord fact: --observed-generation must not be negative, not -1"},
		{[]string{"fact", "--cluster", "prod-eu", "--name", "checkout", "--step", "-1", "--step-count", "4"}, "ripcord fact: --step must not be negative, not -1"},
		{[]string{"fact", "--cluster", "prod-eu", "--name", "checkout", "--step", "1", "--step-count", "-4"}, "ripcord fact: --step-count must not be negative, not -4"},
		// A task fact's fields have no flags: it was sent, and the server's
		// answer listed fields (repository, workflow_run_id, status, ...)
		// that no flag of the command can give.
		{[]string{"fact", "--cluster", "prod-eu", "--source", "task", "--name", "checkout"}, "ripcord fact: a task fact (--source task) needs --file: its fields " +
			"(repository, workflow_run_id, status, app, environment, ...) have no flags; write it as JSON"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, stderr := ripcord(t, env, c.args...)
			if code != 2 || strings.TrimSpace(stderr) != c.want {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, c.want)
			}
		})
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the server, want none", n)
	}
	// The bounds themselves are valid: the command goes on to the token
	// (not set here, so that nothing is sent).
	for _, args := range [][]string{{"releases", "list", "--limit", "1"}, {"releases", "list", "--limit", "1000"}, {"rollout", "list", "--app", "a", "--environment", "e", "--limit", "100"}} {
		if code, _, stderr := ripcord(t, noToken, args...); code != 2 || strings.Contains(stderr, "--limit") || !strings.Contains(stderr, "token") {
			t.Errorf("ripcord %s: exit %d, stderr %q; want the limit taken and the missing token said", strings.Join(args, " "), code, stderr)
		}
	}
}
