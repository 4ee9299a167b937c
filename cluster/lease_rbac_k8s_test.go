package cluster_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ripcord/ripcord/cluster"
	"github.com/ripcord/ripcord/internal/k8stest"
)

// leaseRole is the chart's Role of the agent's Lease, in shop, granting
// verbs on leases.
func leaseRole(verbs ...string) *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "ripcord-agent-lease", Namespace: "shop"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: verbs}}}
}

// leaseWrites counts the requests that create a Lease.
type leaseWrites struct {
	next    http.RoundTripper
	creates atomic.Int32
}

func (c *leaseWrites) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/leases") {
		c.creates.Add(1)
	}
	return c.next.RoundTrip(r)
}

// An agent whose RBAC lets it read its Lease but not create or update it
// waits for the Lease for ever, carrying out no rollback: /healthz answers
// 503 and, like one line of its log at level ERROR (however often it
// tries), names the verb the API server forbids and the Role to fix; once
// it is granted the agent takes the Lease and is ready, without a restart.
func TestALeaseTheAgentMayReadButNotWriteIsSaid(t *testing.T) {
	t.Parallel()
	k := k8stest.Start(t)
	k.Namespace("shop")
	rc := agentConfig(t, k, agentRole(false))
	if _, err := k.Kube.RbacV1().Roles("shop").Create(t.Context(), leaseRole("get"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ripcord-agent-lease", Namespace: "shop"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "ripcord-agent-lease"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "ripcord-agent", Namespace: "shop"}}}
	if _, err := k.Kube.RbacV1().RoleBindings("shop").Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Forbidden at its start, the agent's read of its Lease would make it
	// run without one (an older RBAC), which is another test's case.
	waitUntil(t, "the API server to let the agent read Leases", func() bool { return may(t, k, "get", "coordination.k8s.io", "leases") })
	writes := &leaseWrites{}
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { writes.next = rt; return writes })
	kube, dyn := clientsOf(t, rc)
	health, logs := startLoggedAgent(t, &factSink{}, cluster.Config{Rollouts: cluster.RolloutsOff, Resync: time.Hour, Namespace: "shop"}, kube, dyn)
	says := func(verb string) []string {
		return []string{"forbids the agent to " + verb + " leases.coordination.k8s.io in namespace shop",
			"grant get, create and update", "Role ripcord-agent-lease", "service account shop/ripcord-agent", "no cluster action"}
	}

	waitUntil(t, "/healthz to say the agent may not create its Lease", func() bool {
		code, body := healthz(t, health)
		return code == http.StatusServiceUnavailable && len(missing(body, says("create")...)) == 0
	})
	tried := writes.creates.Load()
	waitUntil(t, "two more attempts to create the Lease", func() bool { return writes.creates.Load() >= tried+2 })
	var said []string
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, "forbids the agent to create") {
			said = append(said, l)
		}
	}
	if len(said) != 1 || len(missing(said[0], append(says("create"), "level=ERROR")...)) > 0 {
		t.Errorf("after %d attempts to create the Lease the log says so in %d lines; want one error naming %q:\n%s",
			writes.creates.Load(), len(said), says("create"), logs.String())
	}

	// Created, the Lease must be renewed: without update the agent loses it.
	if _, err := k.Kube.RbacV1().Roles("shop").Update(t.Context(), leaseRole("get", "create"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "/healthz to say the agent may not update its Lease", func() bool {
		code, body := healthz(t, health)
		return code == http.StatusServiceUnavailable && len(missing(body, says("update")...)) == 0
	})

	if _, err := k.Kube.RbacV1().Roles("shop").Update(t.Context(), leaseRole("get", "create", "update"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "/healthz to be OK", func() bool { code, _ := healthz(t, health); return code == http.StatusOK })
	leases, err := k.Kube.CoordinationV1().Leases("shop").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(leases.Items) != 1 || leases.Items[0].Spec.HolderIdentity == nil || *leases.Items[0].Spec.HolderIdentity == "" {
		t.Errorf("leases in shop %+v; want the agent's, held", leases.Items)
	}
	if !strings.Contains(logs.String(), "may write the Lease of its id again") {
		t.Errorf("the log does not say the Lease is written again:\n%s", logs.String())
	}
}

// A Lease namespace that does not exist (--lease-namespace misspelt)
// keeps the agent waiting for its Lease for ever: /healthz and the log
// say so, and the agent takes the Lease once the namespace is created.
func TestALeaseNamespaceThatDoesNotExistIsSaid(t *testing.T) {
	t.Parallel()
	k := k8stest.Start(t)
	k.Namespace("shop")
	health, logs := startLoggedAgent(t, &factSink{}, cluster.Config{Rollouts: cluster.RolloutsOff, Resync: time.Hour, Namespace: "shop",
		LeaseNamespace: "ripcord-leases"}, k.Kube, k.Dynamic)
	wants := []string{"namespace ripcord-leases does not exist", "--lease-namespace", "no cluster action"}
	waitUntil(t, "/healthz to say the Lease's namespace does not exist", func() bool {
		code, body := healthz(t, health)
		return code == http.StatusServiceUnavailable && len(missing(body, wants...)) == 0
	})
	if m := missing(logs.String(), append(wants, "level=ERROR")...); len(m) > 0 {
		t.Errorf("the log does not say %q:\n%s", m, logs.String())
	}
	k.Namespace("ripcord-leases")
	waitUntil(t, "/healthz to be OK", func() bool { code, _ := healthz(t, health); return code == http.StatusOK })
	leases, err := k.Kube.CoordinationV1().Leases("ripcord-leases").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(leases.Items) != 1 {
		t.Errorf("%d leases in ripcord-leases; want the agent's", len(leases.Items))
	}
}
