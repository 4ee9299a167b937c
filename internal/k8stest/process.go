package k8stest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// adminToken is the API server's static token of a system:masters user.
const adminToken = "ripcord-k8stest-admin"

// process is one component of the control plane.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan error
}

// run starts a binary with its output in <dir>/<name>.log.
func (c *Cluster) run(ctx context.Context, bin, name string, args ...string) error {
	logPath := filepath.Join(c.dir, name+".log")
	out, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Dir = c.dir
	// kwok reads ~/.kwok; keep it inside the test's folder.
	cmd.Env = append(os.Environ(), "HOME="+c.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan error, 1)}
	go func() {
		p.done <- cmd.Wait()
		out.Close()
	}()
	c.procs = append(c.procs, p)
	// A component that dies at once (a bad flag) is reported at once.
	select {
	case err := <-p.done:
		p.done <- err
		return fmt.Errorf("%s exited at start: %v (see %s)", name, err, logPath)
	case <-time.After(200 * time.Millisecond):
	case <-ctx.Done():
	}
	return nil
}

// Stop stops every component, newest first, and waits for each to exit.
func (c *Cluster) Stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
	c.procs = nil
}

// dumpLogs shows the end of each component's log after a failed start.
func (c *Cluster) dumpLogs() {
	for _, p := range c.procs {
		b, _ := os.ReadFile(p.log)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		c.t.Logf("--- %s (last lines)\n%s", p.name, strings.Join(lines, "\n"))
	}
}

// Exited reports the components that have exited, for a test that
// suspects one died.
func (c *Cluster) Exited() []string {
	var out []string
	for _, p := range c.procs {
		if err := p.exited(); err != nil {
			out = append(out, fmt.Sprintf("%s: %v", p.name, err))
		}
	}
	return out
}

type files struct{ tokens, saKey, saPub string }

// writeFiles writes the static token file and the service-account keys.
func writeFiles(dir string) (files, error) {
	f := files{tokens: filepath.Join(dir, "tokens.csv"), saKey: filepath.Join(dir, "sa.key"), saPub: filepath.Join(dir, "sa.pub")}
	if err := os.WriteFile(f.tokens, []byte(adminToken+`,admin,admin,"system:masters"`+"\n"), 0o600); err != nil {
		return f, err
	}
	keys, err := serviceAccountKeys()
	if err != nil {
		return f, err
	}
	if err := os.WriteFile(f.saKey, keys.private, 0o600); err != nil {
		return f, err
	}
	return f, os.WriteFile(f.saPub, keys.public, 0o600)
}

// serviceAccountKeys is the PEM of the key pair the API server signs
// service-account tokens with, made once per test binary: a 2048-bit key
// costs up to a second of CPU under -race, on every Start of a package
// that starts many control planes. Sharing it mixes nothing: each API
// server checks a token's service account (name and UID) in its own etcd.
var serviceAccountKeys = sync.OnceValues(func() (struct{ private, public []byte }, error) {
	var keys struct{ private, public []byte }
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return keys, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return keys, err
	}
	keys.private = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	keys.public = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	return keys, nil
})

// WriteKubeconfig writes at path a kubeconfig for the API server at
// server that authenticates with bearer token (the server's certificate
// is self-signed, made by the API server in --cert-dir, so it is not
// verified).
func WriteKubeconfig(path, server, token string) error {
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: k8stest
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: k8stest
  user: {token: %q}
contexts:
- name: k8stest
  context: {cluster: k8stest, user: k8stest}
current-context: k8stest
`, server, token)
	return os.WriteFile(path, []byte(body), 0o600)
}

// freePorts finds n free ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// waitHTTP waits for url, served by p, to answer 200. It fails at once
// when p has exited: a port it could not bind may be another process's,
// whose answer must not be taken for p's.
func waitHTTP(ctx context.Context, url, token string, p *process) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // the API server's self-signed certificate
	var last error
	for {
		if err := p.exited(); err != nil {
			return fmt.Errorf("%s exited: %v (see %s)", p.name, err, p.log)
		}
		if last = get(ctx, client, url, token); last == nil {
			if err := p.exited(); err != nil { // the answer was another process's
				return fmt.Errorf("%s exited: %v (see %s)", p.name, err, p.log)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for %s (last error: %v)", url, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// get asks url once: nil when it answers 200.
func get(ctx context.Context, client *http.Client, url, token string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return nil
}

// exited is how p ended, nil while it runs.
func (p *process) exited() error {
	select {
	case err := <-p.done:
		p.done <- err
		if err == nil {
			err = errors.New("exit status 0")
		}
		return err
	default:
		return nil
	}
}

// portTaken says which component exited because its port was taken, ""
// when none did.
func (c *Cluster) portTaken() string {
	for _, p := range c.procs {
		if p.exited() == nil {
			continue
		}
		if b, _ := os.ReadFile(p.log); strings.Contains(string(b), "address already in use") {
			return p.name + " could not bind its port: address already in use"
		}
	}
	return ""
}
