package cluster_test

import (
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/ripcord/ripcord/cluster"
	"github.com/ripcord/ripcord/internal/k8stest"
	"github.com/ripcord/ripcord/records"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installTwoVersionRolloutCRD installs a Rollout CRD that serves v1alpha1
// (what the agent reads) and stores v1beta1, converting between them
// without a webhook for now, as an Argo Rollouts upgrade that adds a
// version would.
func installTwoVersionRolloutCRD(t *testing.T, k *k8stest.Cluster) {
	t.Helper()
	version := func(name string, storage bool) map[string]any {
		return map[string]any{"name": name, "served": true, "storage": storage,
			"subresources": map[string]any{"status": map[string]any{}},
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object",
				"x-kubernetes-preserve-unknown-fields": true}}}
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "rollouts.argoproj.io"},
		"spec": map[string]any{"group": "argoproj.io", "scope": "Namespaced",
			"names":    map[string]any{"kind": "Rollout", "listKind": "RolloutList", "plural": "rollouts", "singular": "rollout"},
			"versions": []any{version("v1alpha1", false), version("v1beta1", true)}}}}
	if _, err := k.Dynamic.Resource(crdResource).Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rollouts := k.Dynamic.Resource(k8stest.RolloutResource).Namespace("shop")
	waitUntil(t, "the Rollout CRD to be served", func() bool {
		_, err := rollouts.List(t.Context(), metav1.ListOptions{})
		return err == nil
	})
}

// breakRolloutConversion points the Rollout CRD's conversion at a webhook
// on loopback that answers every review with a 500, and waits until the
// API server uses it: a Rollout cannot be written as v1alpha1 any more
// (it is stored as v1beta1).
func breakRolloutConversion(t *testing.T, k *k8stest.Cluster) {
	t.Helper()
	webhook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "argo-rollouts webhook is down", http.StatusInternalServerError)
	}))
	t.Cleanup(webhook.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: webhook.Certificate().Raw})
	crds := k.Dynamic.Resource(crdResource)
	crd, err := crds.Get(t.Context(), "rollouts.argoproj.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crd.Object["spec"].(map[string]any)["conversion"] = map[string]any{"strategy": "Webhook",
		"webhook": map[string]any{"conversionReviewVersions": []any{"v1"},
			"clientConfig": map[string]any{"url": webhook.URL + "/convert", "caBundle": base64.StdEncoding.EncodeToString(ca)}}}
	if _, err := crds.Update(t.Context(), crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rollouts := k.Dynamic.Resource(k8stest.RolloutResource).Namespace("shop")
	probe := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"name": "probe", "namespace": "shop"}}}
	waitUntil(t, "the API server to use the conversion webhook", func() bool {
		_, err := rollouts.Create(t.Context(), probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "conversion webhook")
	})
}

// createStoredRollout creates a tracked Rollout of release c2:prod-eu/prod
// in shop through v1beta1, the version it is stored in, which needs no
// conversion, with a Healthy status.
func createStoredRollout(t *testing.T, k *k8stest.Cluster, name string) {
	t.Helper()
	rollouts := k.Dynamic.Resource(schema.GroupVersionResource{Group: "argoproj.io", Version: "v1beta1", Resource: "rollouts"}).Namespace("shop")
	created, err := rollouts.Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1beta1", "kind": "Rollout",
		"metadata": map[string]any{"name": name, "namespace": "shop",
			"labels":      map[string]any{cluster.TrackedLabel: "true"},
			"annotations": map[string]any{cluster.ReleaseIDAnnotation: "c2:prod-eu/prod"}},
		"spec": templateSpec("ghcr.io/acme/checkout:v2"),
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Object["status"] = map[string]any{"phase": "Healthy", "observedGeneration": "1", "currentPodHash": "abc"}
	if _, err := rollouts.UpdateStatus(t.Context(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A Rollout CRD whose conversion webhook fails: the API server answered
// the informer's list, served from its watch cache, with no Rollout and
// no error, where a read from etcd fails. The agent does not take that
// empty list for the truth: its inventory never covers the Rollouts (the
// server would report every running one deleted); the Rollouts fail to
// list as with any other error, so the Deployments are reported after the
// bounded wait, and /healthz names the webhook's error.
func TestAnEmptyRolloutListThatEtcdCannotConfirmIsNotTrusted(t *testing.T) {
	t.Parallel()
	k := k8stest.Start(t)
	k.Namespace("shop")
	installTwoVersionRolloutCRD(t, k)
	d := trackedDeployment("shop", "cart", "ghcr.io/acme/cart:v1", "c1:prod-eu/prod")
	if _, err := k.Kube.AppsV1().Deployments("shop").Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	breakRolloutConversion(t, k)
	createStoredRollout(t, k, "checkout")
	rollouts := k.Dynamic.Resource(k8stest.RolloutResource).Namespace("shop")
	waitUntil(t, "the API server to answer from its cache an empty list of the Rollouts, and an error from etcd", func() bool {
		cached, err := rollouts.List(t.Context(), metav1.ListOptions{ResourceVersion: "0"})
		if err != nil || len(cached.Items) > 0 {
			return false
		}
		_, err = rollouts.List(t.Context(), metav1.ListOptions{})
		return err != nil
	})

	sink := &factSink{}
	health, _ := startLoggedAgent(t, sink, cluster.Config{Rollouts: cluster.RolloutsAuto, Resync: time.Hour, Namespace: "shop",
		ListPatience: testListPatience}, k.Kube, k.Dynamic)

	// The agent waits testListPatience for a list to succeed.
	waitWithin(t, 90*time.Second, "a fact of the Deployment", func() bool { return len(sink.factsOf(records.SourceDeployment)) > 0 })
	waitUntil(t, "an inventory", func() bool { return sink.lastInventory() != nil })
	sink.mu.Lock()
	for i, inv := range sink.inventories {
		if slices.Contains(inv, records.SourceRollout) {
			t.Errorf("inventory %d covers %v with uids %v: the server would report the Rollout checkout deleted", i, inv, sink.uids[i])
		}
	}
	sink.mu.Unlock()
	wants := []string{"cannot watch Argo Rollouts", "conversion webhook"}
	code, body := healthz(t, health)
	if code != http.StatusServiceUnavailable || len(missing(body, wants...)) > 0 {
		t.Errorf("/healthz answered %d %s; want 503 naming %q", code, body, missing(body, wants...))
	}
	if got := sink.rolloutFacts(); len(got) > 0 {
		t.Errorf("Rollout facts %v from an agent that cannot read them", got)
	}
}

// A short list is no better than an empty one. An upgrade made v1beta1 the
// Rollouts' storage version, so checkout, written before it, is stored as
// v1alpha1 and cart, written after it, as v1beta1; cart is written after
// the webhook broke. The API server's watch cache, which cannot convert
// cart, goes on answering checkout alone, without an error, while a list
// from etcd fails. An agent that starts then must not inventory checkout
// alone: the server, told of cart by an agent before (through another API
// server, one that reaches the webhook), would report it deleted. It fails
// to list the Rollouts, as with any error, and /healthz says so.
func TestAShortRolloutListFromACacheThatCannotConvertIsNotTrusted(t *testing.T) {
	t.Parallel()
	k := k8stest.Start(t)
	k.Namespace("shop")
	rollouts, upgrade := checkoutStoredAsV1alpha1(t, k)
	upgrade()
	breakRolloutConversion(t, k)
	createStoredRollout(t, k, "cart")
	cart, err := k.Dynamic.Resource(schema.GroupVersionResource{Group: "argoproj.io", Version: "v1beta1", Resource: "rollouts"}).
		Namespace("shop").Get(t.Context(), "cart", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tracked := metav1.ListOptions{LabelSelector: cluster.TrackedLabel + "=true"}
	waitUntil(t, "the API server to answer from its cache checkout alone, and an error from etcd", func() bool {
		cached := tracked
		cached.ResourceVersion = "0"
		l, err := rollouts.List(t.Context(), cached)
		if err != nil || len(l.Items) != 1 || l.Items[0].GetName() != "checkout" {
			return false
		}
		_, err = rollouts.List(t.Context(), tracked)
		return err != nil
	})

	sink := &factSink{}
	health, _ := startLoggedAgent(t, sink, cluster.Config{Rollouts: cluster.RolloutsAuto, Resync: time.Hour, Namespace: "shop",
		ListPatience: testListPatience}, k.Kube, k.Dynamic)
	waitWithin(t, 90*time.Second, "an inventory", func() bool { return sink.lastInventory() != nil })
	sink.mu.Lock()
	for i, inv := range sink.inventories {
		if slices.Contains(inv, records.SourceRollout) && !slices.Contains(sink.uids[i], string(cart.GetUID())) {
			t.Errorf("inventory %d covers %v with uids %v, without cart's %s: the server would report cart deleted",
				i, inv, sink.uids[i], cart.GetUID())
		}
	}
	sink.mu.Unlock()
	wants := []string{"cannot watch Argo Rollouts", "conversion webhook"}
	if code, body := healthz(t, health); code != http.StatusServiceUnavailable || len(missing(body, wants...)) > 0 {
		t.Errorf("/healthz answered %d %s; want 503 naming %q", code, body, missing(body, wants...))
	}
}

// A conversion webhook that breaks while the agent watches the Rollouts:
// once a Rollout is written that the API server cannot convert, its watch
// cache stops there and answers what it held, without an error, so the
// watch goes quiet. That lasts only until the cache lists again from etcd
// (within a minute on the API servers tested), which fails; from then on
// every list of the Rollouts fails, and the agent says so on /healthz as
// for any failing list. This pins that the quiet spell ends in a 503
// naming the webhook rather than in a watch that stays quiet and ready.
func TestARolloutConversionThatBreaksWhileWatchingMakesTheAgentUnready(t *testing.T) {
	t.Parallel()
	k := k8stest.Start(t)
	k.Namespace("shop")
	_, upgrade := checkoutStoredAsV1alpha1(t, k)
	sink := &factSink{}
	health, _ := startLoggedAgent(t, sink, cluster.Config{Rollouts: cluster.RolloutsAuto, Resync: time.Hour, Namespace: "shop",
		ListPatience: testListPatience}, k.Kube, k.Dynamic)
	waitWithin(t, 90*time.Second, "the agent to be ready", func() bool { code, _ := healthz(t, health); return code == http.StatusOK })

	upgrade()
	breakRolloutConversion(t, k)
	createStoredRollout(t, k, "zeta") // sorts after checkout, stored as v1beta1

	wants := []string{"cannot watch Argo Rollouts", "conversion webhook"}
	waitWithin(t, 3*time.Minute, "/healthz to answer 503 naming the webhook", func() bool {
		code, body := healthz(t, health)
		return code == http.StatusServiceUnavailable && len(missing(body, wants...)) == 0
	})
}

// checkoutStoredAsV1alpha1 makes the Rollout CRD with versions v1alpha1
// (its storage version) and v1beta1 on k, and the tracked Rollout checkout
// in namespace shop, stored as v1alpha1. It returns the Rollouts of shop
// and upgrade, which makes v1beta1 the storage version, as an upgrade of
// Argo Rollouts' CRD does.
func checkoutStoredAsV1alpha1(t *testing.T, k *k8stest.Cluster) (rollouts dynamic.ResourceInterface, upgrade func()) {
	t.Helper()
	version := func(name string, storage bool) map[string]any {
		return map[string]any{"name": name, "served": true, "storage": storage,
			"subresources": map[string]any{"status": map[string]any{}},
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object",
				"x-kubernetes-preserve-unknown-fields": true}}}
	}
	crds := k.Dynamic.Resource(crdResource)
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "rollouts.argoproj.io"},
		"spec": map[string]any{"group": "argoproj.io", "scope": "Namespaced",
			"names":    map[string]any{"kind": "Rollout", "listKind": "RolloutList", "plural": "rollouts", "singular": "rollout"},
			"versions": []any{version("v1alpha1", true), version("v1beta1", false)}}}}
	if _, err := crds.Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rollouts = k.Dynamic.Resource(k8stest.RolloutResource).Namespace("shop")
	waitUntil(t, "the Rollout CRD to be served", func() bool {
		_, err := rollouts.List(t.Context(), metav1.ListOptions{})
		return err == nil
	})
	if _, err := rollouts.Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"name": "checkout", "namespace": "shop",
			"labels":      map[string]any{cluster.TrackedLabel: "true"},
			"annotations": map[string]any{cluster.ReleaseIDAnnotation: "c1:prod-eu/prod"}},
		"spec": templateSpec("ghcr.io/acme/checkout:v1")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return rollouts, func() {
		t.Helper()
		upgraded, err := crds.Get(t.Context(), "rollouts.argoproj.io", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		upgraded.Object["spec"].(map[string]any)["versions"] = []any{version("v1alpha1", false), version("v1beta1", true)}
		if _, err := crds.Update(t.Context(), upgraded, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
