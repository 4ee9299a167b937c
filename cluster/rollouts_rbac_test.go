package cluster_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ripcord/ripcord/cluster"
	"github.com/ripcord/ripcord/internal/k8stest"
	"github.com/ripcord/ripcord/records"
)

// agentRole is the agent's Role in shop as a hand-written RBAC may have
// it: the chart's rules, without the Rollouts unless withRollouts.
func agentRole(withRollouts bool) *rbacv1.Role {
	read := []string{"get", "list", "watch"}
	r := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "ripcord-agent", Namespace: "shop"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apps"}, Resources: []string{"deployments", "replicasets"}, Verbs: read},
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: read},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"patch"}},
		}}
	if withRollouts {
		r.Rules = append(r.Rules, rbacv1.PolicyRule{APIGroups: []string{"argoproj.io"}, Resources: []string{"rollouts"}, Verbs: read})
	}
	return r
}

// agentClients creates service account shop/ripcord-agent bound to role
// and returns clients that authenticate as it, with a token from the
// TokenRequest API: the API server's RBAC authorizer judges every request.
func agentClients(t *testing.T, k *k8stest.Cluster, role *rbacv1.Role) (kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	return clientsOf(t, agentConfig(t, k, role))
}

// clientsOf returns the clients of rc.
func clientsOf(t *testing.T, rc *rest.Config) (kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return kube, dyn
}

// agentConfig is agentClients' client configuration.
func agentConfig(t *testing.T, k *k8stest.Cluster, role *rbacv1.Role) *rest.Config {
	t.Helper()
	rc := rest.AnonymousClientConfig(k.Config)
	rc.BearerToken = k.ServiceAccountToken(role)
	return rc
}

// A cluster that serves Argo Rollouts, and an agent whose RBAC does not
// let it list them: the Deployments are still watched, reported and
// inventoried; /healthz answers 503 and, like the log, names the missing
// permission and what to do; once the permission is granted the Rollout
// watch lists them, without a restart, and the agent becomes ready.
func TestAForbiddenRolloutListDoesNotHoldBackTheDeployments(t *testing.T) {
	t.Parallel()
	k := startShop(t)
	createDeployment(t, k, trackedDeployment("shop", "cart", "ghcr.io/acme/cart:v1", "c1:prod-eu/prod"))
	createRollout(t, k, "checkout", templateSpec("ghcr.io/acme/checkout:v2"), nil)
	kube, dyn := agentClients(t, k, agentRole(false))
	sink := &factSink{}
	health, logs := startLoggedAgent(t, sink, cluster.Config{Rollouts: cluster.RolloutsAuto, Resync: time.Hour, Namespace: "shop"}, kube, dyn)

	waitUntil(t, "a fact of the Deployment", func() bool { return len(sink.factsOf(records.SourceDeployment)) > 0 })
	waitUntil(t, "an inventory", func() bool { return sink.lastInventory() != nil })
	if inv := sink.lastInventory(); !slices.Equal(inv, []records.Source{records.SourceDeployment}) {
		t.Errorf("inventory sources %v; want the Deployments alone while the Rollouts cannot be listed", inv)
	}
	wants := []string{"rollouts", "argoproj.io", "forbidden", "in namespace shop", "get, list and watch", "--rollouts=off"}
	waitUntil(t, "/healthz to say the Rollouts are forbidden", func() bool {
		code, body := healthz(t, health)
		return code == http.StatusServiceUnavailable && len(missing(body, wants...)) == 0
	})
	if m := missing(logs.String(), "level=ERROR", "rollouts", "argoproj.io", "get, list and watch", "--rollouts=off"); len(m) > 0 {
		t.Errorf("the log does not say %q:\n%s", m, logs.String())
	}
	if got := sink.rolloutFacts(); len(got) > 0 {
		t.Fatalf("Rollout facts %v from an agent that may not list them", got)
	}

	if _, err := k.Kube.RbacV1().Roles("shop").Update(t.Context(), agentRole(true), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The informer lists again with client-go's backoff, up to a minute
	// after several denials.
	waitWithin(t, 90*time.Second, "a fact of the Rollout", func() bool { return len(sink.rolloutFacts()) > 0 })
	waitUntil(t, "/healthz to be OK", func() bool { code, _ := healthz(t, health); return code == http.StatusOK })
	waitUntil(t, "an inventory covering Rollouts", func() bool { return slices.Contains(sink.lastInventory(), records.SourceRollout) })
}

// Argo Rollouts installed after an agent started with --rollouts=on whose
// RBAC does not let it list them: /healthz stops saying they are not
// served and names the missing permission instead, and the agent becomes
// ready once it is granted.
func TestRolloutsInstalledLaterButForbiddenSayWhichPermissionIsMissing(t *testing.T) {
	t.Parallel()
	k := k8stest.Start(t)
	k.Namespace("shop")
	d := trackedDeployment("shop", "cart", "ghcr.io/acme/cart:v1", "c1:prod-eu/prod")
	if _, err := k.Kube.AppsV1().Deployments("shop").Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kube, dyn := agentClients(t, k, agentRole(false))
	sink := &factSink{}
	health, _ := startLoggedAgent(t, sink, cluster.Config{Rollouts: cluster.RolloutsOn, Resync: time.Hour, Namespace: "shop"}, kube, dyn)
	waitUntil(t, "a fact of the Deployment", func() bool { return len(sink.factsOf(records.SourceDeployment)) > 0 })

	k.InstallRolloutCRD()
	createRollout(t, k, "checkout", templateSpec("ghcr.io/acme/checkout:v2"), nil)
	wants := []string{"forbidden", "in namespace shop", "get, list and watch", "--rollouts=off"}
	// --rollouts=on looks again with backoff up to a minute.
	waitWithin(t, 90*time.Second, "/healthz to say the Rollouts are forbidden", func() bool {
		code, body := healthz(t, health)
		return code == http.StatusServiceUnavailable && len(missing(body, wants...)) == 0
	})
	if _, err := k.Kube.RbacV1().Roles("shop").Update(t.Context(), agentRole(true), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitWithin(t, 90*time.Second, "a fact of the Rollout", func() bool { return len(sink.rolloutFacts()) > 0 })
	waitUntil(t, "/healthz to be OK", func() bool { code, _ := healthz(t, health); return code == http.StatusOK })
	waitUntil(t, "an inventory covering Rollouts", func() bool { return slices.Contains(sink.lastInventory(), records.SourceRollout) })
}

// watchCutter ends the watches a client has open when cut is called, as an
// API server restart or a load balancer's idle timeout does: the informer
// then lists and watches again, with the permissions of that moment (the
// API server does not end a watch whose permission is revoked).
type watchCutter struct {
	next    http.RoundTripper
	mu      sync.Mutex
	cancels []context.CancelFunc
}

func (c *watchCutter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Query().Get("watch") != "true" {
		return c.next.RoundTrip(r)
	}
	ctx, cancel := context.WithCancel(r.Context())
	c.mu.Lock()
	c.cancels = append(c.cancels, cancel)
	c.mu.Unlock()
	return c.next.RoundTrip(r.WithContext(ctx))
}

func (c *watchCutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cancel := range c.cancels {
		cancel()
	}
	c.cancels = nil
}

// mayList asks the API server's authorizer whether the agent's service
// account may list the resource of group in shop.
func mayList(t *testing.T, k *k8stest.Cluster, group, resource string) bool {
	t.Helper()
	return may(t, k, "list", group, resource)
}

// may asks the API server's authorizer whether the agent's service
// account may verb the resource of group in shop. The authorizer learns
// of a Role or RoleBinding from a watch, so a test that changed them waits
// for its answer before it counts on it.
func may(t *testing.T, k *k8stest.Cluster, verb, group, resource string) bool {
	t.Helper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "system:serviceaccount:shop:ripcord-agent", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:shop", "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "shop", Verb: verb, Group: group, Resource: resource}}}
	got, err := k.Kube.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), review, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got.Status.Allowed
}

// The agent's permission to list Rollouts revoked after it listed them:
// once its watch ends and it lists them again, /healthz answers 503 and,
// like the log (once, however many lists fail), names the permission, as
// at the start; once it is granted again the agent lists them and is
// ready, without a restart.
func TestARolloutPermissionRevokedLaterIsSaid(t *testing.T) {
	t.Parallel()
	k := startShop(t)
	createDeployment(t, k, trackedDeployment("shop", "cart", "ghcr.io/acme/cart:v1", "c1:prod-eu/prod"))
	createRollout(t, k, "checkout", templateSpec("ghcr.io/acme/checkout:v2"), nil)
	rc := agentConfig(t, k, agentRole(true))
	kube, _ := clientsOf(t, rc) // before the cutter: only the Rollout watch is cut
	cutter := &watchCutter{}
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { cutter.next = rt; return cutter })
	_, dyn := clientsOf(t, rc)
	sink := &factSink{}
	health, logs := startLoggedAgent(t, sink, cluster.Config{Rollouts: cluster.RolloutsAuto, Resync: time.Hour, Namespace: "shop"}, kube, dyn)
	waitUntil(t, "a fact of the Rollout", func() bool { return len(sink.rolloutFacts()) > 0 })
	waitUntil(t, "/healthz to be OK", func() bool { code, _ := healthz(t, health); return code == http.StatusOK })

	if _, err := k.Kube.RbacV1().Roles("shop").Update(t.Context(), agentRole(false), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the API server to forbid the agent's Rollout list", func() bool { return !mayList(t, k, "argoproj.io", "rollouts") })
	cutter.cut()
	wants := []string{"rollouts", "argoproj.io", "forbidden", "in namespace shop", "get, list and watch", "--rollouts=off"}
	waitUntil(t, "/healthz to say the Rollouts are forbidden", func() bool {
		code, body := healthz(t, health)
		return code == http.StatusServiceUnavailable && len(missing(body, wants...)) == 0
	})

	if _, err := k.Kube.RbacV1().Roles("shop").Update(t.Context(), agentRole(true), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The informer lists again with client-go's backoff, up to a minute.
	waitWithin(t, 90*time.Second, "/healthz to be OK again", func() bool { code, _ := healthz(t, health); return code == http.StatusOK })
	var said []string
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, "cannot watch Argo Rollouts") {
			said = append(said, l)
		}
	}
	if len(said) != 1 || len(missing(said[0], append(wants, "level=ERROR")...)) > 0 {
		t.Errorf("the log says the Rollouts cannot be watched in %d lines; want one error naming %q:\n%s", len(said), wants, logs.String())
	}
	if !strings.Contains(logs.String(), "lists Argo Rollouts again") {
		t.Errorf("the log does not say the Rollouts are listed again:\n%s", logs.String())
	}
}
