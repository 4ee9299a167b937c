package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

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

// agentProcess is `ripcord agent` run as a child process of cluster
// prod-eu, watching the cluster of kubeconfig and reporting to a server
// that does not answer (its reports are not what these tests look at).
type agentProcess struct {
	cmd  *exec.Cmd
	addr string // its /healthz and /metrics
	logs *lockedBuffer
}

// startAgent starts the agent with args after its --listen, and env added
// to its environment, and returns once it listens.
func startAgent(t *testing.T, kubeconfig string, args []string, env ...string) *agentProcess {
	t.Helper()
	bin, err := testbin.Ripcord()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("eu-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := &agentProcess{logs: &lockedBuffer{}}
	a.cmd = exec.Command(bin, append([]string{"agent", "--listen", "127.0.0.1:0"}, args...)...)
	a.cmd.Env = append(os.Environ(), "RIPCORD_CLUSTER=prod-eu", "RIPCORD_SERVER=http://127.0.0.1:1",
		"RIPCORD_CLUSTER_TOKEN_FILE="+tokenFile, "RIPCORD_AGENT_STATE="+filepath.Join(dir, "state"), "KUBECONFIG="+kubeconfig)
	a.cmd.Env = append(a.cmd.Env, env...)
	a.cmd.Stdout, a.cmd.Stderr = a.logs, a.logs
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The agent listens on a port the kernel chooses and names it in its
	// first line: a free port picked here could be taken by another
	// test's server before the agent binds it.
	a.waitFor(t, 60*time.Second, "the agent did not say where it listens", func() bool {
		m := agentListening.FindStringSubmatch(a.logs.String())
		if m != nil {
			a.addr = m[1]
		}
		return m != nil
	})
	return a
}

// agentListening is the address in the agent's "starting ripcord agent" line.
var agentListening = regexp.MustCompile(`msg="starting ripcord agent".* listen=(\S+)`)

// waitFor polls cond until it holds; after timeout the agent is killed and
// the test fails, saying what did not happen, with the agent's output.
func (a *agentProcess) waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); {
		if time.Now().After(deadline) {
			_ = a.cmd.Process.Kill()
			_ = a.cmd.Wait()
			t.Fatalf("%s:\n%s", what, a.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop stops the agent as Kubernetes does (SIGTERM), checks it exited
// cleanly, and returns its output.
func (a *agentProcess) stop(t *testing.T) string {
	t.Helper()
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Wait(); err != nil {
		t.Fatalf("the agent did not stop cleanly: %v\n%s", err, a.logs.String())
	}
	return a.logs.String()
}
