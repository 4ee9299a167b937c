package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/k8stest"
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
	t.Parallel()
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
	t.Parallel()
	k := k8stest.Start(t)
	var env []string
	for name := range agentMisspelt {
		env = append(env, name+"=x")
	}
	a := startAgent(t, k.Kubeconfig, []string{"--rollouts", "off"}, env...)
	a.waitFor(t, 30*time.Second, "the agent did not become ready", func() bool {
		resp, err := http.Get("http://" + a.addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	agentWarnings(t, a.stop(t))
}
