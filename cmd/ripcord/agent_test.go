package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAgentRefusesToStartWithoutWhatItNeeds(t *testing.T) {
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
