package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAgentRefusesToStartWithoutWhatItNeeds(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("eu-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	clean := []string{"RIPCORD_CLUSTER_TOKEN=", "RIPCORD_CLUSTER_TOKEN_FILE=", "KUBECONFIG=", "KUBERNETES_SERVICE_HOST="}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no token":             {args: []string{"--cluster", "prod-eu"}, want: "--token-file"},
		"token file missing":   {args: []string{"--cluster", "prod-eu", "--token-file", filepath.Join(dir, "nope")}, want: "token-file"},
		"not in a cluster":     {args: []string{"--cluster", "prod-eu", "--token-file", tokenFile}, want: "--kubeconfig"},
		"kubeconfig not there": {args: []string{"--cluster", "prod-eu", "--token-file", tokenFile, "--kubeconfig", filepath.Join(dir, "kc")}, want: "kubeconfig"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, errOut := ripcord(t, clean, append([]string{"agent", "--state-dir", dir}, tc.args...)...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 naming %s", code, errOut, tc.want)
			}
		})
	}
}

// A flag the agent cannot use is named before the agent looks for a
// cluster: on a laptop without one, a missing --cluster, a bad --rollouts,
// --server, --listen or --log-level were answered "not in a cluster and no
// --kubeconfig" (or, for --log-level, taken as info without a word), and
// the flag's own problem came only once a cluster was found.
func TestAgentNamesABadFlagBeforeLookingForACluster(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	clean := []string{"RIPCORD_CLUSTER_TOKEN=eu-token", "RIPCORD_CLUSTER_TOKEN_FILE=", "RIPCORD_CLUSTER=", "RIPCORD_SERVER=",
		"KUBECONFIG=", "KUBERNETES_SERVICE_HOST=", "RIPCORD_AGENT_STATE=" + dir}
	cases := []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"no cluster", nil, []string{}, []string{"--cluster is required (or set RIPCORD_CLUSTER)"}},
		{"rollouts", nil, []string{"--cluster", "prod-eu", "--rollouts", "maybe"}, []string{`--rollouts must be auto, on or off, not "maybe"`}},
		{"server flag", nil, []string{"--cluster", "prod-eu", "--server", "ftp://ripcord.example.com"}, []string{`--server "ftp://ripcord.example.com" is not an http(s) URL`}},
		{"server from the environment", []string{"RIPCORD_SERVER=127.0.0.1:8080"}, []string{"--cluster", "prod-eu"}, []string{`--server (from RIPCORD_SERVER) "127.0.0.1:8080" is not an http(s) URL`}},
		{"listen", nil, []string{"--cluster", "prod-eu", "--listen", "nope"}, []string{`--listen "nope" is not host:port`}},
		{"log level", nil, []string{"--cluster", "prod-eu", "--log-level", "verbose"}, []string{`ripcord agent: --log-level must be debug, info, warn or error, not "verbose"`}},
		{"every problem at once", nil, []string{"--rollouts", "maybe", "--listen", "nope"}, []string{"--cluster is required", "--rollouts must be", "--listen \"nope\""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := ripcord(t, append(clean, c.env...), append([]string{"agent"}, c.args...)...)
			if code != 2 || strings.Contains(errOut, "not in a cluster") {
				t.Errorf("exit %d, stderr %q; want 2 and the flag named before any cluster is looked for", code, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q; want it to say %q", errOut, w)
				}
			}
		})
	}
	// Good values of those flags pass: the agent goes on to look for a
	// cluster, and finds none here.
	code, _, errOut := ripcord(t, clean, "agent", "--cluster", "prod-eu", "--rollouts", "on", "--server", "https://ripcord.example.com",
		"--listen", "127.0.0.1:0", "--log-level", "debug")
	if code != 2 || !strings.Contains(errOut, "not in a cluster and no --kubeconfig") {
		t.Errorf("good flags: exit %d, stderr %q; want 2 and no cluster found", code, errOut)
	}
}

// A token file the agent cannot read is named with what gave it: from
// RIPCORD_CLUSTER_TOKEN_FILE, which a command line without --token-file
// does not show, the refusal "token-file: open …" left the user to find
// where the path came from.
func TestAgentSaysWhatNamedATokenFileItCannotRead(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope")
	clean := []string{"RIPCORD_CLUSTER_TOKEN=", "KUBECONFIG=", "KUBERNETES_SERVICE_HOST=", "RIPCORD_AGENT_STATE=" + dir}
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"environment", []string{"RIPCORD_CLUSTER_TOKEN_FILE=" + missing}, nil, "(the file given by environment variable RIPCORD_CLUSTER_TOKEN_FILE)"},
		{"flag", []string{"RIPCORD_CLUSTER_TOKEN_FILE="}, []string{"--token-file", missing}, "(the file given by flag --token-file)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := ripcord(t, append(clean, c.env...), append([]string{"agent", "--cluster", "prod-eu"}, c.args...)...)
			if code != 2 || !strings.Contains(errOut, missing) || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, stderr %q; want 2, the file and %q", code, errOut, c.want)
			}
		})
	}
}
