package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ripcord/ripcord/internal/k8stest"
	"github.com/ripcord/ripcord/internal/testbin"
)

// lockedBuffer is the output of a process the test reads while it runs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// forbiddenRolloutsKubeconfig writes a kubeconfig for service account
// shop/ripcord-agent, whose Role lets it watch Deployments but not the
// Rollouts the cluster serves.
func forbiddenRolloutsKubeconfig(t *testing.T, k *k8stest.Cluster) string {
	t.Helper()
	ctx := t.Context()
	read := []string{"get", "list", "watch"}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "ripcord-agent", Namespace: "shop"}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "ripcord-agent", Namespace: "shop"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: read}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ripcord-agent", Namespace: "shop"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "ripcord-agent"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "ripcord-agent", Namespace: "shop"}}}
	if _, err := k.Kube.CoreV1().ServiceAccounts("shop").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Kube.RbacV1().Roles("shop").Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Kube.RbacV1().RoleBindings("shop").Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hour := int64(3600)
	tok, err := k.Kube.CoreV1().ServiceAccounts("shop").CreateToken(ctx, "ripcord-agent",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "kubeconfig")
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: k8stest
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: agent
  user: {token: %q}
contexts:
- name: k8stest
  context: {cluster: k8stest, user: agent}
current-context: k8stest
`, k.Config.Host, tok.Status.Token)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
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
	k := k8stest.Start(t)
	k.Namespace("shop")
	k.InstallRolloutCRD()
	kubeconfig := forbiddenRolloutsKubeconfig(t, k)
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
	cmd := exec.Command(bin, "agent", "--listen", addr, "--namespace", "shop", "--rollouts", "auto")
	cmd.Env = append(os.Environ(), "RIPCORD_CLUSTER=prod-eu", "RIPCORD_SERVER=http://127.0.0.1:1",
		"RIPCORD_CLUSTER_TOKEN_FILE="+tokenFile, "RIPCORD_AGENT_STATE="+filepath.Join(dir, "state"), "KUBECONFIG="+kubeconfig)
	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); watchRestarts(addr, "rollouts") < 3; {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the Rollout list was not retried 3 times:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the agent did not stop cleanly: %v\n%s", err, logs.String())
	}
	var clientGo []string
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, "rollouts.argoproj.io is forbidden") && !strings.Contains(l, "cannot watch Argo Rollouts") {
			clientGo = append(clientGo, l)
		}
	}
	if len(clientGo) != 1 || !strings.HasPrefix(clientGo[0], "time=") || !strings.Contains(clientGo[0], "level=WARN") ||
		!strings.Contains(clientGo[0], "component=client-go") {
		t.Errorf("client-go's failed Rollout lists are in %d lines; want one, in the agent's format, at warning level, component=client-go:\n%s",
			len(clientGo), logs.String())
	}
}
