package clusteractions_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ripcord/ripcord/cluster"
	"github.com/ripcord/ripcord/internal/k8stest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// runAgent runs an agent on stateDir until the returned stop is called.
func runAgent(t *testing.T, k *k8stest.Cluster, s *server, stateDir string, spoolMax int) (stop func()) {
	t.Helper()
	_, stop = agentOf(t, cluster.Config{Cluster: "prod-eu", Server: s.URL, Token: func() (string, error) { return euToken, nil },
		StateDir: stateDir, SpoolMax: spoolMax, Resync: 3 * time.Second, PollWait: 2 * time.Second, MaxBackoff: time.Second},
		k.Kube, k.Dynamic, "agent")
	return stop
}

// A deletion the agent never delivers still reaches the server: the agent
// that replaces a stopped one (a rescheduled pod, whose emptyDir state is
// gone) never sees the deleted object, and an agent whose spool overflowed
// while the server was down dropped the deletion fact. Neither is ever
// resynced, so the server must learn it from what the agent holds.
func TestADeletionTheAgentDidNotDeliverStillReachesTheServer(t *testing.T) {
	t.Parallel()
	k := k8stest.Start(t)
	k.Namespace(ns)
	s := startServer(t, testdb.MigratedURL(t, "sqlite"))
	sc := &scene{t: t, k: k, s: s, ctx: context.Background()}
	remove := func(name string) {
		t.Helper()
		if err := k.Kube.AppsV1().Deployments(ns).Delete(sc.ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		sc.eventually(name+" to be gone", func() bool {
			_, err := k.Kube.AppsV1().Deployments(ns).Get(sc.ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
	}

	// An agent that was not running when the workload was deleted.
	stop := runAgent(t, k, s, t.TempDir(), 0)
	for _, n := range []string{"gone", "kept"} {
		sc.openRelease(n+"-1", n, "registry:5000/team/"+n+":v1", "")
		sc.create(tracked(n, "registry:5000/team/"+n+":v1", "v1", n+"-1", 1))
		sc.waitState(n+"-1", "healthy")
	}
	stop()
	remove("gone")
	runAgent(t, k, s, t.TempDir(), 1)
	sc.eventually("the server to stop counting the deleted workload as running", func() bool { return !sc.running("gone-1") })
	if !sc.running("kept-1") {
		t.Error("the workload that still runs is no longer counted as running")
	}

	// An agent whose spool dropped the deletion while the server was down.
	sc.openRelease("lost-1", "lost", "registry:5000/team/lost:v1", "")
	sc.create(tracked("lost", "registry:5000/team/lost:v1", "v1", "lost-1", 1))
	sc.waitState("lost-1", "healthy")
	s.Stop()
	remove("lost")
	sc.update("kept", func(d *appsv1.Deployment) { two := int32(2); d.Spec.Replicas = &two })
	sc.eventually("kept to scale", func() bool { return rolledOut(sc.get("kept")) && sc.get("kept").Status.Replicas == 2 })
	time.Sleep(time.Second) // the scale's facts push the deletion out of the one-fact spool
	s.Start()
	sc.eventually("the server to stop counting the workload deleted during the outage", func() bool { return !sc.running("lost-1") })
	if !sc.running("kept-1") {
		t.Error("the workload that still runs is no longer counted as running")
	}
}
