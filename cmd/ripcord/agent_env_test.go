package main

import (
	"bytes"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/k8stest"
	"github.com/ripcord/ripcord/internal/testbin"
)

// agentMisspelt are variables a pod spec may hold by mistake, each with the
// one meant.
var agentMisspelt = map[string]string{
	"RIPCORD_CLUSTER_TOKN": "RIPCORD_CLUSTER_TOKEN",
	"RIPCORD_AGENT_STAT":   "RIPCORD_AGENT_STATE",
}

// agentWarnings checks that output has one warning per agentMisspelt
// variable, from the agent's logger, naming it and the one meant, and no
// other: the agent's own variables are known.
func agentWarnings(t *testing.T, output string) {
	t.Helper()
	checkWarnings(t, output, agentMisspelt, func(l string) bool { return strings.Contains(l, "level=WARN") })
}

// A misspelt RIPCORD_CLUSTER_TOKEN leaves the agent without a token: the
// refusal comes with the warning that says why.
func TestAgentRefusingToStartWarnsAboutUnknownVariables(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	env := []string{"RIPCORD_CLUSTER_TOKEN=", "RIPCORD_CLUSTER_TOKEN_FILE=", "KUBECONFIG=", "KUBERNETES_SERVICE_HOST=",
		"RIPCORD_CLUSTER=prod-eu", "RIPCORD_AGENT_STATE=" + t.TempDir()}
	for name := range agentMisspelt {
		env = append(env, name+"=x")
	}
	code, _, errOut := ripcord(t, env, "agent")
	if code != 2 || !strings.Contains(errOut, "no token") {
		t.Fatalf("exit %d, stderr %q; want 2, no token", code, errOut)
	}
	agentWarnings(t, errOut)
}

// An agent that starts warns once per unknown variable, and not about its
// own (RIPCORD_CLUSTER, RIPCORD_SERVER, RIPCORD_CLUSTER_TOKEN_FILE,
// RIPCORD_AGENT_STATE), as serve does.
func TestAgentWarnsAboutUnknownVariablesAndStarts(t *testing.T) {
	k := k8stest.Start(t)
	bin, err := testbin.Ripcord()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("eu-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "agent", "--listen", addr, "--rollouts", "off")
	cmd.Env = append(os.Environ(), "RIPCORD_CLUSTER=prod-eu", "RIPCORD_SERVER=http://127.0.0.1:1",
		"RIPCORD_CLUSTER_TOKEN_FILE="+tokenFile, "RIPCORD_AGENT_STATE="+filepath.Join(dir, "state"), "KUBECONFIG="+k.Kubeconfig)
	for name := range agentMisspelt {
		cmd.Env = append(cmd.Env, name+"=x")
	}
	// Read only once the agent has exited.
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the agent did not become ready:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the agent did not stop cleanly: %v\n%s", err, logs.String())
	}
	agentWarnings(t, logs.String())
}
