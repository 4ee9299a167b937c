package clusteractions_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ripcord/ripcord/app/clusteractions"
	"github.com/ripcord/ripcord/cluster"
	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/k8stest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// namespacedAgent runs `ripcord agent --namespace namespace` as the chart
// deploys it there: a service account whose Role (the chart's rules, the
// Lease included) holds in that namespace only.
func namespacedAgent(t *testing.T, k *k8stest.Cluster, s *server, namespace string) *cluster.Agent {
	t.Helper()
	read := []string{"get", "list", "watch"}
	rc := rest.AnonymousClientConfig(k.Config)
	rc.BearerToken = k.ServiceAccountToken(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "ripcord-agent", Namespace: namespace},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apps"}, Resources: []string{"deployments", "replicasets"}, Verbs: read},
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: read},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"patch"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
		}})
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := agentOf(t, cluster.Config{Cluster: "prod-eu", Server: s.URL, Token: func() (string, error) { return euToken, nil },
		Namespace: namespace, StateDir: t.TempDir(), Resync: time.Hour, PollWait: 2 * time.Second, MaxBackoff: time.Second,
		Rollouts: cluster.RolloutsOff}, kube, dyn, "agent of "+namespace)
	return a
}

// Two agents of one cluster, each deployed in and watching its own
// namespace with RBAC there only: each rollback is carried out by the
// agent of the workload's namespace, under that agent's own id and Lease.
// Handed to the other one, the first to poll, it would be tried where that
// agent may read nothing, and the right agent would never see it.
func TestEachNamespacesAgentCarriesOutTheActionsOfItsNamespace(t *testing.T) {
	t.Parallel()
	k := k8stest.Start(t)
	s := startServer(t, testdb.MigratedURL(t, "sqlite"))
	sc := &scene{t: t, k: k, s: s, ctx: context.Background()}
	running := map[string]string{"team-a": "v1", "team-b": "v3"}
	agents := map[string]*cluster.Agent{}
	for namespace, version := range running {
		k.Namespace(namespace)
		d := tracked("checkout", "registry:5000/"+namespace+"/checkout:"+version, version, "checkout-"+namespace+"-"+version, 1)
		d.Namespace = namespace
		sc.create(d)
		agents[namespace] = namespacedAgent(t, k, s, namespace)
	}
	if a, b := agents["team-a"].ID(), agents["team-b"].ID(); a == b ||
		a != cluster.DefaultAgentID("prod-eu", "team-a") || b != cluster.DefaultAgentID("prod-eu", "team-b") {
		t.Fatalf("agent ids %q and %q; want each its namespace's default id", a, b)
	}

	// Queued together, as the first poll to come would take them all.
	queued := map[string]string{}
	err := s.db.InTx(sc.ctx, func(tx *sql.Tx) error {
		for namespace := range running {
			id, err := clusteractions.Enqueue(sc.ctx, tx, clusteractions.Action{Cluster: "prod-eu", Kind: actionapi.KindRollback,
				Namespace: namespace, Deployment: "checkout", TargetVersion: "v0", FailedVersion: "v2", RollbackOf: "checkout-" + namespace + "-v2"})
			if err != nil {
				return err
			}
			queued[namespace] = id
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for namespace, id := range queued {
		st := sc.finished(id)
		// v2 runs in neither namespace: the agent that read the workload
		// says what runs there and changes nothing.
		if st.Agent != agents[namespace].ID() || st.Result == nil || st.Result.Outcome != actionapi.OutcomeSkipped ||
			st.Result.RunningVersion != running[namespace] {
			t.Errorf("the action in %s ended %s by agent %q: %+v; want skipped by %s, which read %s running there",
				namespace, st.State, st.Agent, st.Result, agents[namespace].ID(), running[namespace])
		}
	}

	// Each id takes turns through a Lease of its own, in its namespace.
	for namespace, a := range agents {
		leases, err := k.Kube.CoordinationV1().Leases(namespace).List(sc.ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, l := range leases.Items {
			names = append(names, l.Name)
		}
		if len(names) != 1 || !strings.HasPrefix(names[0], "ripcord-agent-prod-eu-"+namespace) {
			t.Errorf("leases in %s: %v; want the one of agent %s", namespace, names, a.ID())
		}
	}
}
