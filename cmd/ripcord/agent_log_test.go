package main

import (
	"bufio"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ripcord/ripcord/internal/k8stest"
)

// forbiddenRolloutsKubeconfig writes a kubeconfig for service account
// shop/ripcord-agent, whose Role lets it watch Deployments but not the
// Rollouts the cluster serves.
func forbiddenRolloutsKubeconfig(t *testing.T, k *k8stest.Cluster) string {
	t.Helper()
	read := []string{"get", "list", "watch"}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "ripcord-agent", Namespace: "shop"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: read}}}
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := k8stest.WriteKubeconfig(p, k.Config.Host, k.ServiceAccountToken(role)); err != nil {
		t.Fatal(err)
	}
	return p
}

// watchRestarts is the agent's ripcord_agent_watch_restarts_total for
// resource, 0 while it does not answer.
func watchRestarts(addr, resource string) int {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	prefix := `ripcord_agent_watch_restarts_total{resource="` + resource + `"} `
	for s := bufio.NewScanner(resp.Body); s.Scan(); {
		if v, ok := strings.CutPrefix(s.Text(), prefix); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return int(n)
		}
	}
	return 0
}

// client-go logs every failed list of its informers, retried with
// backoff: an agent whose RBAC forbids the Rollouts logged the same line
// on stderr in klog's own format every few seconds, then every minute,
// forever. It is in the agent's log format now, at warning level, once:
// the agent says what it means itself (at error level, and on /healthz).
func TestClientGoLinesAreInTheAgentsLogOnce(t *testing.T) {
	t.Parallel()
	k := k8stest.Start(t)
	k.Namespace("shop")
	k.InstallRolloutCRD()
	kubeconfig := forbiddenRolloutsKubeconfig(t, k)
	a := startAgent(t, kubeconfig, []string{"--namespace", "shop", "--rollouts", "auto"})
	a.waitFor(t, 60*time.Second, "the Rollout list was not retried 3 times", func() bool { return watchRestarts(a.addr, "rollouts") >= 3 })
	logs := a.stop(t)
	var clientGo []string
	for l := range strings.Lines(logs) {
		if strings.Contains(l, "rollouts.argoproj.io is forbidden") && !strings.Contains(l, "cannot watch Argo Rollouts") {
			clientGo = append(clientGo, l)
		}
	}
	if len(clientGo) != 1 || !strings.HasPrefix(clientGo[0], "time=") || !strings.Contains(clientGo[0], "level=WARN") ||
		!strings.Contains(clientGo[0], "component=client-go") {
		t.Errorf("client-go's failed Rollout lists are in %d lines; want one, in the agent's format, at warning level, component=client-go:\n%s",
			len(clientGo), logs)
	}
}
