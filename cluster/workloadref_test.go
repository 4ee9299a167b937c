package cluster_test

import (
	"bufio"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ripcord/ripcord/cluster"
	"github.com/ripcord/ripcord/internal/k8stest"
	"github.com/ripcord/ripcord/records"
)

// getCounter counts the GETs of one object (its path) that a client sends
// to the API server.
type getCounter struct {
	next http.RoundTripper
	path string
	mu   sync.Mutex
	n    int
}

func (c *getCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && r.URL.Path == c.path {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
	}
	return c.next.RoundTrip(r)
}

func (c *getCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// countingKube is a client of k that counts the GETs of path.
func countingKube(t *testing.T, k *k8stest.Cluster, path string) (kubernetes.Interface, *getCounter) {
	t.Helper()
	c := &getCounter{path: path}
	cfg := rest.CopyConfig(k.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { c.next = rt; return c })
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kube, c
}

// skipped is the agent's ripcord_agent_facts_skipped_total for reason.
func skipped(t *testing.T, metricsURL, reason string) int {
	t.Helper()
	resp, err := http.Get(metricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	prefix := `ripcord_agent_facts_skipped_total{reason="` + reason + `"} `
	for s := bufio.NewScanner(resp.Body); s.Scan(); {
		if v, ok := strings.CutPrefix(s.Text(), prefix); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s%s: %v", prefix, v, err)
			}
			return int(n)
		}
	}
	return 0
}

func workloadRefSpec(deployment string) map[string]any {
	return map[string]any{"workloadRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment}}
}

// A workloadRef Rollout's Deployment is read from the agent's cache, not
// asked of the API server each time the Rollout is reported: with a few
// hundred such Rollouts, every resync was as many GETs.
func TestAWorkloadRefRolloutsDeploymentIsNotFetchedAtEachReport(t *testing.T) {
	t.Parallel()
	k := k8stest.Start(t)
	k.Namespace("shop")
	k.InstallRolloutCRD()
	d := trackedDeployment("shop", "checkout", "ghcr.io/acme/checkout:v3", "c2:prod-eu/prod")
	d.Labels, d.Annotations = nil, nil // Argo's own Deployment: not tracked
	if _, err := k.Kube.AppsV1().Deployments("shop").Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createRollout(t, k, "checkout", workloadRefSpec("checkout"), map[string]any{"workloadObservedGeneration": "1"})
	kube, gets := countingKube(t, k, "/apis/apps/v1/namespaces/shop/deployments/checkout")
	sink := &factSink{}
	startAgent(t, sink, cluster.Config{Rollouts: cluster.RolloutsAuto, Resync: time.Second, Namespace: "shop"}, kube, k.Dynamic)

	waitUntil(t, "three reports of the Rollout (its first sight and two resyncs)", func() bool { return len(sink.rolloutFacts()) >= 3 })
	facts := sink.rolloutFacts()
	for _, f := range facts {
		if !slices.Equal(f.Images, []string{"ghcr.io/acme/checkout:v3"}) {
			t.Errorf("fact %s images %v; want the referenced Deployment's [ghcr.io/acme/checkout:v3]", f.FactID, f.Images)
		}
	}
	if n := gets.count(); n != 0 {
		t.Errorf("the agent sent GET Deployment shop/checkout %d times for %d reports of the Rollout; want none", n, len(facts))
	}
}

// The agent's cache of Deployments may be behind a Rollout's status: the
// Rollout says Argo has observed generation 2 of its Deployment while the
// agent still holds generation 1, so its fact waits. It is sent when the
// new template reaches the cache, without another change of the Rollout
// and without waiting for the resync.
func TestAWorkloadRefRolloutIsReportedWhenItsDeploymentsNewTemplateArrives(t *testing.T) {
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
	createRollout(t, k, "checkout", workloadRefSpec("checkout"), map[string]any{"workloadObservedGeneration": "2"})
	sink := &factSink{}
	a := startAgent(t, sink, cluster.Config{Rollouts: cluster.RolloutsAuto, Resync: time.Hour, Namespace: "shop"}, k.Kube, k.Dynamic)
	metrics := httptest.NewServer(a.Handler())
	defer metrics.Close()
	waitUntil(t, "the Rollout's fact to wait for generation 2", func() bool { return skipped(t, metrics.URL, cluster.SkipNotObserved) > 0 })

	d, err := deployments.Get(t.Context(), "checkout", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Image = "ghcr.io/acme/checkout:v4"
	if _, err := deployments.Update(t.Context(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a fact of the Rollout", func() bool { return len(sink.rolloutFacts()) > 0 })
	if f := sink.rolloutFacts()[0]; !slices.Equal(f.Images, []string{"ghcr.io/acme/checkout:v4"}) || f.Phase != records.PhaseProgressing {
		t.Errorf("Rollout fact %s with %v; want Progressing with generation 2's [ghcr.io/acme/checkout:v4]", f.Phase, f.Images)
	}
}

// Argo scales a workloadRef Rollout's Deployment to 0 and runs its template
// itself. Labelled tracked, that Deployment is not reported as a workload
// of its own while a tracked Rollout references it (it would be Healthy at
// 0 replicas, as if its release ran there); the log says why once, at info
// level. Once the reference goes, it is reported again.
func TestADeploymentATrackedRolloutReferencesIsNotReportedAsItsOwnWorkload(t *testing.T) {
	t.Parallel()
	for name, unreference := range map[string]func(t *testing.T, k *k8stest.Cluster){
		"the Rollout is deleted": func(t *testing.T, k *k8stest.Cluster) {
			if err := k.Dynamic.Resource(k8stest.RolloutResource).Namespace("shop").Delete(t.Context(), "checkout", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		"the Rollout references another Deployment": func(t *testing.T, k *k8stest.Cluster) {
			rollouts := k.Dynamic.Resource(k8stest.RolloutResource).Namespace("shop")
			ro, err := rollouts.Get(t.Context(), "checkout", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ro.Object["spec"] = workloadRefSpec("checkout-v2")
			if _, err := rollouts.Update(t.Context(), ro, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			k := startShop(t)
			d := trackedDeployment("shop", "checkout", "ghcr.io/acme/checkout:v3", "c2:prod-eu/prod")
			zero := int32(0)
			d.Spec.Replicas = &zero // as Argo leaves it
			createDeployment(t, k, d)
			createRollout(t, k, "checkout", workloadRefSpec("checkout"), map[string]any{"workloadObservedGeneration": "1"})
			sink := &factSink{}
			metrics, logs := startLoggedAgent(t, sink, cluster.Config{Rollouts: cluster.RolloutsAuto, Resync: time.Second, Namespace: "shop"}, k.Kube, k.Dynamic)

			reported := func() {
				if fs := sink.factsOf(records.SourceDeployment); len(fs) > 0 {
					t.Fatalf("the Deployment a tracked Rollout references was reported: %s with %v", fs[0].Phase, fs[0].Images)
				}
			}
			waitUntil(t, "the Deployment withheld at its first sight and two resyncs", func() bool {
				reported()
				return skipped(t, metrics, cluster.SkipReferenced) >= 3
			})
			waitUntil(t, "a report of the Rollout", func() bool { return len(sink.rolloutFacts()) > 0 })
			reported()
			const why = "Deployment shop/checkout is not reported as a workload of its own: tracked Rollout shop/checkout references it"
			var lines []string
			for l := range strings.Lines(logs.String()) {
				if strings.Contains(l, why) {
					lines = append(lines, l)
				}
			}
			if len(lines) != 1 || !strings.Contains(lines[0], "level=INFO") {
				t.Errorf("the log says %q in %d lines; want one, at info level:\n%s", why, len(lines), logs.String())
			}

			unreference(t, k)
			waitUntil(t, "a report of the Deployment once no Rollout references it", func() bool {
				return len(sink.factsOf(records.SourceDeployment)) > 0
			})
			if f := sink.factsOf(records.SourceDeployment)[0]; f.ReleaseID != "c2:prod-eu/prod" || !slices.Equal(f.Images, []string{"ghcr.io/acme/checkout:v3"}) {
				t.Errorf("Deployment fact of %s with %v; want c2:prod-eu/prod with v3", f.ReleaseID, f.Images)
			}
		})
	}
}

// A tracked Deployment the agent reported before a tracked Rollout took it
// over (spec.workloadRef) is left out of the inventory from then on, so the
// server reports it deleted rather than go on counting its last report
// (Healthy, of the release it ran then) as what runs. Once no Rollout
// references it, it is in the inventory again.
func TestADeploymentATrackedRolloutTookOverIsLeftOutOfTheInventory(t *testing.T) {
	t.Parallel()
	k := startShop(t)
	uid := string(createDeployment(t, k, trackedDeployment("shop", "checkout", "ghcr.io/acme/checkout:v3", "c2:prod-eu/prod")).UID)
	sink := &factSink{}
	a := startAgent(t, sink, cluster.Config{Rollouts: cluster.RolloutsAuto, Resync: time.Second, Namespace: "shop"}, k.Kube, k.Dynamic)
	metrics := httptest.NewServer(a.Handler())
	defer metrics.Close()
	inventoryHolds := func(uid string) bool {
		sources, uids := sink.lastInventoryUIDs()
		return slices.Contains(sources, records.SourceDeployment) && slices.Contains(uids, uid)
	}
	waitUntil(t, "a fact of the Deployment", func() bool { return len(sink.factsOf(records.SourceDeployment)) > 0 })
	waitUntil(t, "an inventory holding the Deployment", func() bool { return inventoryHolds(uid) })

	createRollout(t, k, "checkout", workloadRefSpec("checkout"), map[string]any{"workloadObservedGeneration": "1"})
	waitUntil(t, "the Deployment withheld", func() bool { return skipped(t, metrics.URL, cluster.SkipReferenced) > 0 })
	waitUntil(t, "an inventory of both sources that leaves the Deployment out", func() bool {
		sources, uids := sink.lastInventoryUIDs()
		return slices.Contains(sources, records.SourceRollout) && slices.Contains(sources, records.SourceDeployment) &&
			len(uids) == 1 && !slices.Contains(uids, uid)
	})

	if err := k.Dynamic.Resource(k8stest.RolloutResource).Namespace("shop").Delete(t.Context(), "checkout", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "an inventory holding the Deployment again", func() bool { return inventoryHolds(uid) })
}

// The server stops counting a tracked Deployment a tracked Rollout takes
// over within seconds, not at the next resync (15 minutes by default):
// the inventory that leaves it out is sent soon after, and the log says
// why the server reported it deleted. Let go, it is in an inventory again
// as soon.
func TestAnInventoryFollowsADeploymentTakenOverOrLetGoWithinSeconds(t *testing.T) {
	t.Parallel()
	k := startShop(t)
	uid := string(createDeployment(t, k, trackedDeployment("shop", "checkout", "ghcr.io/acme/checkout:v3", "c2:prod-eu/prod")).UID)
	// The server reports the Deployment deleted when an inventory of the
	// Deployments leaves it out, as the real one does.
	sink := &factSink{deleted: func(sources []records.Source, uids []string) string {
		if !slices.Contains(sources, records.SourceDeployment) || slices.Contains(uids, uid) {
			return "[]"
		}
		return `[{"workload":"prod-eu/shop/deployment/checkout","uid":"` + uid + `","release_id":"c2:prod-eu/prod","outcome":"applied"}]`
	}}
	logs := &syncBuffer{}
	startAgent(t, sink, cluster.Config{Rollouts: cluster.RolloutsAuto, Resync: time.Hour, Namespace: "shop",
		Log: slog.New(slog.NewTextHandler(logs, nil))}, k.Kube, k.Dynamic)
	inventoryHolds := func(uid string) bool {
		sources, uids := sink.lastInventoryUIDs()
		return slices.Contains(sources, records.SourceDeployment) && slices.Contains(uids, uid)
	}
	waitUntil(t, "an inventory holding the Deployment", func() bool { return inventoryHolds(uid) })

	createRollout(t, k, "checkout", workloadRefSpec("checkout"), map[string]any{"workloadObservedGeneration": "1"})
	waitWithin(t, 15*time.Second, "an inventory of both sources that leaves the Deployment out", func() bool {
		sources, uids := sink.lastInventoryUIDs()
		return slices.Contains(sources, records.SourceRollout) && len(uids) == 1 && !slices.Contains(uids, uid)
	})
	said := "the server no longer counts as running a Deployment a tracked Rollout took over"
	waitUntil(t, "the log to say why the server reported the Deployment deleted", func() bool { return strings.Contains(logs.String(), said) })
	if wrong := "the cluster no longer holds"; strings.Contains(logs.String(), wrong) {
		t.Errorf("the log says %q of a Deployment the cluster still holds:\n%s", wrong, logs.String())
	}

	if err := k.Dynamic.Resource(k8stest.RolloutResource).Namespace("shop").Delete(t.Context(), "checkout", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitWithin(t, 15*time.Second, "an inventory holding the Deployment again", func() bool { return inventoryHolds(uid) })
}
