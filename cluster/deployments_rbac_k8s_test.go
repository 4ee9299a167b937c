package cluster_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ripcord/ripcord/cluster"
	"github.com/ripcord/ripcord/internal/k8stest"
	"github.com/ripcord/ripcord/records"
)

// withoutDeploymentReads is the agent's Role without get, list and watch
// on Deployments.
func withoutDeploymentReads() *rbacv1.Role {
	r := agentRole(false)
	r.Rules = r.Rules[1:]
	r.Rules = append(r.Rules, rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"replicasets"},
		Verbs: []string{"get", "list", "watch"}})
	return r
}

// An agent whose RBAC does not let it list Deployments sends no fact, and
// client-go's informer retries for ever: /healthz answers 503 and, like
// one line of its log at level ERROR, names the permission to grant,
// rather than "starting"; once granted, the Deployments are watched
// without a restart and the agent is ready. The permission revoked later
// (its watch ends, and it lists again) is said the same way.
func TestAForbiddenDeploymentListIsSaid(t *testing.T) {
	t.Parallel()
	k := k8stest.Start(t)
	k.Namespace("shop")
	createDeployment(t, k, trackedDeployment("shop", "cart", "ghcr.io/acme/cart:v1", "c1:prod-eu/prod"))
	rc := agentConfig(t, k, withoutDeploymentReads())
	cutter := &watchCutter{}
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { cutter.next = rt; return cutter })
	kube, dyn := clientsOf(t, rc)
	sink := &factSink{}
	health, logs := startLoggedAgent(t, sink, cluster.Config{Rollouts: cluster.RolloutsOff, Resync: time.Hour, Namespace: "shop"}, kube, dyn)
	wants := []string{"cannot watch Deployments", "deployments.apps", "forbidden", "get, list and watch on deployments",
		"in namespace shop", "without a restart"}
	waitUntil(t, "/healthz to say the Deployments are forbidden", func() bool {
		code, body := healthz(t, health)
		return code == http.StatusServiceUnavailable && len(missing(body, wants...)) == 0
	})
	waitUntil(t, "the log to say the Deployments are forbidden", func() bool {
		return len(missing(logs.String(), append(wants, "level=ERROR")...)) == 0
	})

	if _, err := k.Kube.RbacV1().Roles("shop").Update(t.Context(), agentRole(false), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The informer lists again with client-go's backoff, up to a minute.
	waitWithin(t, 90*time.Second, "a fact of the Deployment", func() bool { return len(sink.factsOf(records.SourceDeployment)) > 0 })
	waitUntil(t, "/healthz to be OK", func() bool { code, _ := healthz(t, health); return code == http.StatusOK })

	if _, err := k.Kube.RbacV1().Roles("shop").Update(t.Context(), withoutDeploymentReads(), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the API server to forbid the agent's Deployment list", func() bool { return !mayList(t, k, "apps", "deployments") })
	cutter.cut()
	waitUntil(t, "/healthz to say the Deployments are forbidden again", func() bool {
		code, body := healthz(t, health)
		return code == http.StatusServiceUnavailable && len(missing(body, wants...)) == 0
	})
	if _, err := k.Kube.RbacV1().Roles("shop").Update(t.Context(), agentRole(false), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitWithin(t, 90*time.Second, "/healthz to be OK again", func() bool { code, _ := healthz(t, health); return code == http.StatusOK })
	var said int
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, "cannot watch Deployments") {
			said++
		}
	}
	if said != 2 || !strings.Contains(logs.String(), "lists Deployments again") {
		t.Errorf("the log says the Deployments cannot be watched in %d lines, want 2 (one per denial), and that they are listed again:\n%s",
			said, logs.String())
	}
}

// On a cluster that serves Argo Rollouts the Rollout watch, and after it
// the Deployment watch, waits for the cache of the Deployments Rollouts
// may reference: a Role that does not let the agent list Deployments is
// said there too, rather than "starting" for ever.
func TestAForbiddenDeploymentListIsSaidWhereRolloutsAreServed(t *testing.T) {
	t.Parallel()
	k := startShop(t)
	createDeployment(t, k, trackedDeployment("shop", "cart", "ghcr.io/acme/cart:v1", "c1:prod-eu/prod"))
	role := withoutDeploymentReads()
	role.Rules = append(role.Rules, agentRole(true).Rules[3])
	kube, dyn := agentClients(t, k, role)
	sink := &factSink{}
	health, logs := startLoggedAgent(t, sink, cluster.Config{Rollouts: cluster.RolloutsAuto, Resync: time.Hour, Namespace: "shop"}, kube, dyn)
	wants := []string{"cannot watch Deployments", "forbidden", "get, list and watch on deployments", "in namespace shop"}
	waitUntil(t, "/healthz to say the Deployments are forbidden", func() bool {
		code, body := healthz(t, health)
		return code == http.StatusServiceUnavailable && len(missing(body, wants...)) == 0
	})
	if m := missing(logs.String(), append(wants, "level=ERROR")...); len(m) > 0 {
		t.Errorf("the log does not say %q:\n%s", m, logs.String())
	}
	if _, err := k.Kube.RbacV1().Roles("shop").Update(t.Context(), agentRole(true), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitWithin(t, 90*time.Second, "a fact of the Deployment", func() bool { return len(sink.factsOf(records.SourceDeployment)) > 0 })
	waitUntil(t, "/healthz to be OK", func() bool { code, _ := healthz(t, health); return code == http.StatusOK })
}
