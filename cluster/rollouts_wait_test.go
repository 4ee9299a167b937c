package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ripcord/ripcord/cluster"
	"github.com/ripcord/ripcord/internal/k8stest"
	"github.com/ripcord/ripcord/records"
)

// startAgent runs an agent of cluster prod-eu that posts to sink until the
// test ends; cfg's zero fields take quick test values.
func startAgent(t *testing.T, sink http.Handler, cfg cluster.Config, kube kubernetes.Interface, dyn dynamic.Interface) *cluster.Agent {
	t.Helper()
	srv := httptest.NewServer(sink)
	t.Cleanup(srv.Close)
	cfg.Cluster, cfg.Server = "prod-eu", srv.URL
	cfg.Token = func() (string, error) { return "tok", nil }
	cfg.StateDir = t.TempDir()
	cfg.PollWait, cfg.MaxBackoff = 200*time.Millisecond, time.Second
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	a, err := cluster.New(cfg, kube, dyn)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	})
	return a
}

// startLoggedAgent is startAgent with the agent's log in the buffer it
// returns and its /healthz and /metrics served on loopback, at the URL it
// returns, until the test ends.
func startLoggedAgent(t *testing.T, sink http.Handler, cfg cluster.Config, kube kubernetes.Interface, dyn dynamic.Interface) (string, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	cfg.Log = slog.New(slog.NewTextHandler(logs, nil))
	srv := httptest.NewServer(startAgent(t, sink, cfg, kube, dyn).Handler())
	t.Cleanup(srv.Close)
	return srv.URL, logs
}

// startShop starts a cluster with namespace shop that serves Rollouts.
func startShop(t *testing.T) *k8stest.Cluster {
	t.Helper()
	k := k8stest.Start(t)
	k.Namespace("shop")
	k.InstallRolloutCRD()
	return k
}

// createDeployment creates d in its namespace and returns it as created.
func createDeployment(t *testing.T, k *k8stest.Cluster, d *appsv1.Deployment) *appsv1.Deployment {
	t.Helper()
	created, err := k.Kube.AppsV1().Deployments(d.Namespace).Create(t.Context(), d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// checkDeploymentsAloneAndUnready waits for an inventory and checks that
// it covers the Deployments alone (while says why they must be), and that
// /healthz at health answers 503 and, like the log at level ERROR, says
// every one of wants.
func checkDeploymentsAloneAndUnready(t *testing.T, sink *factSink, health string, logs *syncBuffer, while string, wants ...string) {
	t.Helper()
	waitUntil(t, "an inventory", func() bool { return sink.lastInventory() != nil })
	if inv := sink.lastInventory(); !slices.Equal(inv, []records.Source{records.SourceDeployment}) {
		t.Errorf("inventory sources %v; want the Deployments alone %s", inv, while)
	}
	code, body := healthz(t, health)
	if code != http.StatusServiceUnavailable || len(missing(body, wants...)) > 0 {
		t.Errorf("/healthz answered %d %s; want 503 naming %q", code, body, missing(body, wants...))
	}
	if m := missing(logs.String(), append(wants, "level=ERROR")...); len(m) > 0 {
		t.Errorf("the log does not say %q:\n%s", m, logs.String())
	}
}

func trackedDeployment(namespace, name, image, release string) *appsv1.Deployment {
	one := int32(1)
	pods := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
			Labels:      map[string]string{cluster.TrackedLabel: "true"},
			Annotations: map[string]string{cluster.ReleaseIDAnnotation: release}},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: pods},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pods},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: image}}}}},
	}
}

// createRollout creates a tracked Rollout of release c2:prod-eu/prod in
// shop and gives it a Progressing status, as Argo's controller would,
// with the status fields of more.
func createRollout(t *testing.T, k *k8stest.Cluster, name string, spec map[string]any, more map[string]any) {
	t.Helper()
	ro := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"name": name, "namespace": "shop",
			"labels":      map[string]any{cluster.TrackedLabel: "true"},
			"annotations": map[string]any{cluster.ReleaseIDAnnotation: "c2:prod-eu/prod"}},
		"spec": spec,
	}}
	rollouts := k.Dynamic.Resource(k8stest.RolloutResource).Namespace("shop")
	created, err := rollouts.Create(t.Context(), ro, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]any{"phase": "Progressing", "observedGeneration": "1", "currentPodHash": "abc"}
	maps.Copy(status, more)
	created.Object["status"] = status
	if _, err := rollouts.UpdateStatus(t.Context(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func templateSpec(image string) map[string]any {
	return map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "checkout", "image": image}}}}}
}

// syncBuffer is a log the agent writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func healthz(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func missing(text string, wants ...string) []string {
	var out []string
	for _, w := range wants {
		if !strings.Contains(text, w) {
			out = append(out, w)
		}
	}
	return out
}

// --rollouts=on on a cluster that does not serve Argo Rollouts: the
// Deployments are watched, delivered and inventoried as usual; /healthz is
// not OK and, like the log, names the missing resource and what to do;
// once Argo Rollouts are installed their watch starts without a restart
// and the agent becomes ready.
func TestRolloutsOnWithoutArgoRolloutsWatchesDeploymentsAndSaysWhyItIsNotReady(t *testing.T) {
	t.Parallel()
	k := k8stest.Start(t)
	k.Namespace("shop")
	d := trackedDeployment("shop", "cart", "ghcr.io/acme/cart:v1", "c1:prod-eu/prod")
	if _, err := k.Kube.AppsV1().Deployments("shop").Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sink := &factSink{}
	logs := &syncBuffer{}
	a := startAgent(t, sink, cluster.Config{Rollouts: cluster.RolloutsOn, Resync: time.Second,
		Log: slog.New(slog.NewTextHandler(logs, nil))}, k.Kube, k.Dynamic)
	health := httptest.NewServer(a.Handler())
	defer health.Close()

	waitUntil(t, "a fact of the Deployment", func() bool { return len(sink.factsOf(records.SourceDeployment)) > 0 })
	checkDeploymentsAloneAndUnready(t, sink, health.URL, logs, "while Rollouts are not served", "rollouts.argoproj.io/v1alpha1", "--rollouts=on", "install Argo Rollouts", "--rollouts=auto")

	k.InstallRolloutCRD()
	createRollout(t, k, "checkout", templateSpec("ghcr.io/acme/checkout:v2"), nil)
	waitUntil(t, "a fact of the Rollout", func() bool { return len(sink.rolloutFacts()) > 0 })
	waitUntil(t, "/healthz to be OK", func() bool { code, _ := healthz(t, health.URL); return code == http.StatusOK })
	waitUntil(t, "an inventory covering Rollouts", func() bool { return slices.Contains(sink.lastInventory(), records.SourceRollout) })
}

// flakyDiscovery is a loopback proxy in front of the API server that
// fails the discovery of argoproj.io/v1alpha1 (with a 500, as an API
// server between two etcd leaders does) its first failures times.
type flakyDiscovery struct {
	proxy    *httputil.ReverseProxy
	mu       sync.Mutex
	failures int
	asked    int
}

func (f *flakyDiscovery) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/apis/argoproj.io/v1alpha1" {
		f.mu.Lock()
		f.asked++
		fail := f.asked <= f.failures
		f.mu.Unlock()
		if fail {
			writeInternalError(w, "etcdserver: leader changed")
			return
		}
	}
	f.proxy.ServeHTTP(w, r)
}

func (f *flakyDiscovery) timesAsked() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked
}

// flakyKube is a client whose discovery of Argo Rollouts fails the first
// failures times.
func flakyKube(t *testing.T, k *k8stest.Cluster, failures int) (kubernetes.Interface, *flakyDiscovery) {
	t.Helper()
	f := &flakyDiscovery{failures: failures, proxy: apiServerProxy(t, k)}
	kube, err := kubernetes.NewForConfig(serveAPI(t, f))
	if err != nil {
		t.Fatal(err)
	}
	return kube, f
}

// apiServerProxy passes requests on to k's API server with the cluster
// admin's credentials, for a loopback proxy that fails some of them.
func apiServerProxy(t *testing.T, k *k8stest.Cluster) *httputil.ReverseProxy {
	t.Helper()
	target, err := url.Parse(k.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := rest.TransportFor(k.Config)
	if err != nil {
		t.Fatal(err)
	}
	return &httputil.ReverseProxy{Transport: tr, Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }}
}

// serveAPI serves h on loopback until the test ends, and returns the
// configuration of a client that talks to it as to an API server.
func serveAPI(t *testing.T, h http.Handler) *rest.Config {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL, QPS: 200, Burst: 400}
}

// writeInternalError answers as an API server does with a 500: a Status
// of reason InternalError carrying message.
func writeInternalError(w http.ResponseWriter, message string) {
	body, err := json.Marshal(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Message: message, Reason: metav1.StatusReasonInternalError, Code: http.StatusInternalServerError})
	if err != nil {
		panic(err) // a Status always encodes
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = w.Write(body)
}

// --rollouts=auto: a discovery that failed (an API server error, not "not
// served") is asked again within seconds, not at the next resync, so a
// transient error at the start does not blind the agent to Rollouts for a
// whole resync period.
func TestRolloutsAutoAsksAgainSoonAfterAFailedDiscovery(t *testing.T) {
	t.Parallel()
	k := k8stest.Start(t)
	k.Namespace("shop")
	k.InstallRolloutCRD()
	createRollout(t, k, "checkout", templateSpec("ghcr.io/acme/checkout:v2"), nil)
	kube, flaky := flakyKube(t, k, 3)
	sink := &factSink{}
	startAgent(t, sink, cluster.Config{Rollouts: cluster.RolloutsAuto, Resync: time.Hour}, kube, k.Dynamic)

	waitUntil(t, "a fact of the Rollout", func() bool { return len(sink.rolloutFacts()) > 0 })
	if n := flaky.timesAsked(); n < 4 {
		t.Errorf("discovery was asked %d times; the first 3 failed, so the Rollouts needed a 4th", n)
	}
	waitUntil(t, "an inventory covering Rollouts", func() bool { return slices.Contains(sink.lastInventory(), records.SourceRollout) })
}

// An Argo Rollout with spec.workloadRef has no pod template of its own:
// Argo runs the referenced Deployment's. Its facts carry that template's
// images, read from the Deployment even when it is not tracked, so the
// server can tell which release the Rollout runs.
func TestARolloutWithAWorkloadRefCarriesTheReferencedDeploymentsImages(t *testing.T) {
	t.Parallel()
	k := k8stest.Start(t)
	k.Namespace("shop")
	k.InstallRolloutCRD()
	d := trackedDeployment("shop", "checkout", "ghcr.io/acme/checkout:v3", "c2:prod-eu/prod")
	d.Labels, d.Annotations = nil, nil // Argo's own Deployment: not tracked
	if _, err := k.Kube.AppsV1().Deployments("shop").Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createRollout(t, k, "checkout", map[string]any{
		"workloadRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "checkout"}},
		map[string]any{"workloadObservedGeneration": "1"}) // Argo has seen the Deployment's template
	sink := &factSink{}
	startAgent(t, sink, cluster.Config{Rollouts: cluster.RolloutsAuto, Resync: time.Hour, Namespace: "shop"}, k.Kube, k.Dynamic)

	waitUntil(t, "a fact of the Rollout", func() bool { return len(sink.rolloutFacts()) > 0 })
	if f := sink.rolloutFacts()[0]; !slices.Equal(f.Images, []string{"ghcr.io/acme/checkout:v3"}) || f.ReleaseID != "c2:prod-eu/prod" {
		t.Errorf("Rollout fact images %v of %s; want the referenced Deployment's [ghcr.io/acme/checkout:v3]", f.Images, f.ReleaseID)
	}
}

// setRolloutStatus changes status fields of Rollout shop/name, as Argo's
// controller would.
func setRolloutStatus(t *testing.T, k *k8stest.Cluster, name string, fields map[string]any) {
	t.Helper()
	rollouts := k.Dynamic.Resource(k8stest.RolloutResource).Namespace("shop")
	ro, err := rollouts.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(ro.Object["status"].(map[string]any), fields)
	if _, err := rollouts.UpdateStatus(t.Context(), ro, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A new image in a workloadRef Rollout's Deployment is not reported with
// the phase of the previous template: until Argo has observed the
// Deployment's new generation (status.workloadObservedGeneration), a
// Healthy Rollout is the old image's, and the new release is not healthy.
func TestAWorkloadRefRolloutDoesNotLendItsOldPhaseToTheNewImage(t *testing.T) {
	t.Parallel()
	k := k8stest.Start(t)
	k.Namespace("shop")
	k.InstallRolloutCRD()
	deployments := k.Kube.AppsV1().Deployments("shop")
	d := trackedDeployment("shop", "checkout", "ghcr.io/acme/checkout:v3", "c2:prod-eu/prod")
	d.Labels, d.Annotations = nil, nil
	if _, err := deployments.Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createRollout(t, k, "checkout", map[string]any{
		"workloadRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "checkout"}},
		map[string]any{"phase": "Healthy", "workloadObservedGeneration": "1"})
	sink := &factSink{}
	startAgent(t, sink, cluster.Config{Rollouts: cluster.RolloutsAuto, Resync: time.Hour}, k.Kube, k.Dynamic)
	waitUntil(t, "the Healthy fact of v3", func() bool { return len(sink.rolloutFacts()) > 0 })

	d, err := deployments.Get(t.Context(), "checkout", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Image = "ghcr.io/acme/checkout:v4"
	if _, err := deployments.Update(t.Context(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The Rollout changes before Argo has seen the new template, then Argo
	// sees it and starts rolling v4 out.
	setRolloutStatus(t, k, "checkout", map[string]any{"message": "touched"})
	setRolloutStatus(t, k, "checkout", map[string]any{"phase": "Progressing", "workloadObservedGeneration": "2"})
	waitUntil(t, "the Progressing fact of v4", func() bool {
		return slices.ContainsFunc(sink.rolloutFacts(), func(f records.Fact) bool { return f.Phase == records.PhaseProgressing })
	})
	for _, f := range sink.rolloutFacts() {
		if f.Phase == records.PhaseHealthy && slices.Contains(f.Images, "ghcr.io/acme/checkout:v4") {
			t.Errorf("fact %s: Healthy with v4, the previous template's phase", f.FactID)
		}
	}
	if got := sink.rolloutFacts(); !slices.Equal(got[len(got)-1].Images, []string{"ghcr.io/acme/checkout:v4"}) {
		t.Errorf("last fact images %v; want v4", got[len(got)-1].Images)
	}
}
