// Package k8stest starts a real Kubernetes control plane on 127.0.0.1 for
// end-to-end tests: etcd, kube-apiserver, kube-controller-manager (so
// Deployments get ReplicaSets and roll out), kube-scheduler and kwok (one
// fake node, so pods are scheduled and reach Running without a kubelet).
// The binaries are built from the Go module proxy by scripts/k8s-binaries.sh
// into a folder named by version; without them a test is skipped, or fails
// when CI=true, so CI can never pass without having run it.
//
// Pods get loopback addresses (kwok's pod CIDR is 127.0.0.0/24), so a test
// can serve their health endpoint itself.
package k8stest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Version is the Kubernetes release the binaries are built from.
const Version = "v1.34.2"

// BinDirEnv overrides where the binaries are.
const BinDirEnv = "RIPCORD_K8S_BIN"

// Binaries the control plane needs.
var Binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}

// PodCIDR is kwok's pod address range: pods get 127.0.0.x.
const PodCIDR = "127.0.0.0/24"

// NodeName is the fake node.
const NodeName = "kwok-node-0"

// BinDir is the folder scripts/k8s-binaries.sh builds into.
func BinDir() string {
	if d := os.Getenv(BinDirEnv); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "ripcord", "k8s-"+Version)
}

// Require skips the test (or fails it when CI=true) unless every binary is
// there; it returns their folder.
func Require(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("a real Kubernetes control plane is not started in -short mode")
	}
	dir := BinDir()
	var missing []string
	for _, b := range Binaries {
		if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "kwok-stage")); err != nil {
		missing = append(missing, "kwok-stage/")
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("Kubernetes binaries missing in %s (%s): run scripts/k8s-binaries.sh (about 11 minutes once)",
			dir, strings.Join(missing, ", "))
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// Cluster is a running control plane.
type Cluster struct {
	// Kubeconfig is a file with an admin token for the API server.
	Kubeconfig string
	Config     *rest.Config
	Kube       kubernetes.Interface
	Dynamic    dynamic.Interface

	t     testing.TB
	dir   string
	procs []*process
}

// startAttempts is how many times Start tries, each on new ports.
const startAttempts = 3

// findPorts finds the control plane's ports (a test's seam).
var findPorts = freePorts

// Start starts the control plane and stops it when the test ends. Its
// ports are found free, closed, and then bound by the components: meanwhile
// any socket of the test binary or of another package's can take one (the
// kernel hands out the same range for every port 0). A component that then
// cannot bind it exits, and the control plane is started again on new
// ports rather than failing the test.
func Start(t testing.TB) *Cluster {
	t.Helper()
	bin := Require(t)
	c := &Cluster{t: t}
	t.Cleanup(c.Stop)
	for attempt := 1; ; attempt++ {
		c.dir = t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		err := c.start(ctx, bin)
		cancel()
		if err == nil {
			return c
		}
		if taken := c.portTaken(); taken != "" && attempt < startAttempts {
			t.Logf("k8stest: %s; starting the control plane again on new ports", taken)
			c.Stop()
			continue
		}
		c.dumpLogs()
		t.Fatalf("k8stest: %v", err)
	}
}

func (c *Cluster) start(ctx context.Context, bin string) error {
	files, err := writeFiles(c.dir)
	if err != nil {
		return err
	}
	ports, err := findPorts(3)
	if err != nil {
		return err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	if err := c.run(ctx, bin, "etcd", "--name=default", "--data-dir="+filepath.Join(c.dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--unsafe-no-fsync", "--log-level=warn"); err != nil {
		return err
	}
	if err := waitHTTP(ctx, etcdURL+"/health", "", c.procs[len(c.procs)-1]); err != nil {
		return fmt.Errorf("etcd never became healthy: %w", err)
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	if err := c.run(ctx, bin, "kube-apiserver", "--etcd-servers="+etcdURL, "--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", ports[2]), "--cert-dir="+filepath.Join(c.dir, "certs"),
		"--token-auth-file="+files.tokens, "--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range=10.96.0.0/24", "--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+files.saPub, "--service-account-signing-key-file="+files.saKey,
		"--enable-priority-and-fairness=false", "--endpoint-reconciler-type=none",
		"--disable-admission-plugins=TaintNodesByCondition"); err != nil {
		return err
	}
	if err := waitHTTP(ctx, server+"/readyz", adminToken, c.procs[len(c.procs)-1]); err != nil {
		return fmt.Errorf("kube-apiserver never became ready: %w", err)
	}
	c.Kubeconfig = filepath.Join(c.dir, "kubeconfig")
	if err := WriteKubeconfig(c.Kubeconfig, server, adminToken); err != nil {
		return err
	}
	if err := c.connect(); err != nil {
		return err
	}
	if err := c.run(ctx, bin, "kube-controller-manager", "--kubeconfig="+c.Kubeconfig, "--leader-elect=false",
		"--controllers=*,-nodeipam,-nodelifecycle,-ttl,-bootstrapsigner,-tokencleaner",
		"--service-account-private-key-file="+files.saKey, "--secure-port=0"); err != nil {
		return err
	}
	if err := c.run(ctx, bin, "kube-scheduler", "--kubeconfig="+c.Kubeconfig, "--leader-elect=false", "--secure-port=0"); err != nil {
		return err
	}
	stages := filepath.Join(bin, "kwok-stage")
	if err := c.run(ctx, bin, "kwok", "--kubeconfig="+c.Kubeconfig, "--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake", "--cidr="+PodCIDR, "--node-ip=127.0.0.1",
		"--node-lease-duration-seconds=0",
		"-c="+filepath.Join(stages, "node", "fast", "node-initialize.yaml"),
		"-c="+filepath.Join(stages, "pod", "fast", "pod-ready.yaml"),
		"-c="+filepath.Join(stages, "pod", "fast", "pod-complete.yaml"),
		"-c="+filepath.Join(stages, "pod", "fast", "pod-delete.yaml")); err != nil {
		return err
	}
	return c.addNode(ctx)
}

func (c *Cluster) connect() error {
	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	rc.QPS, rc.Burst = 200, 400
	c.Config = rc
	if c.Kube, err = kubernetes.NewForConfig(rc); err != nil {
		return err
	}
	c.Dynamic, err = dynamic.NewForConfig(rc)
	return err
}

// addNode registers the fake node kwok manages and waits until it is Ready.
func (c *Cluster) addNode(ctx context.Context) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: NodeName,
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		Labels:      map[string]string{"kubernetes.io/hostname": NodeName, "type": "kwok"}}}
	if _, err := c.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create node: %w", err)
	}
	return poll(ctx, "the kwok node to be Ready", func() (bool, error) {
		n, err := c.Kube.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// Namespace creates a namespace and waits for its default service account,
// without which the ReplicaSet controller cannot create pods yet.
func (c *Cluster) Namespace(name string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		c.t.Fatalf("k8stest: create namespace %s: %v", name, err)
	}
	if err := poll(ctx, "service account default in "+name, func() (bool, error) {
		_, err := c.Kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}); err != nil {
		c.t.Fatalf("k8stest: %v", err)
	}
}

// poll checks cond every 100 ms until it holds or ctx ends.
func poll(ctx context.Context, what string, cond func() (bool, error)) error {
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for %s (last error: %v)", what, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
