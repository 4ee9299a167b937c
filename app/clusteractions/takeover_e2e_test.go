package clusteractions_test

import (
	"context"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ripcord/ripcord/cluster"
	"github.com/ripcord/ripcord/internal/k8stest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A Deployment a tracked Rollout takes over (spec.workloadRef) stops
// counting as running its release; the Rollout's release supersedes it.
// Once the Rollout lets it go, the Deployment runs that superseded
// release again, and the server counts it so, without reopening it.
func TestADeploymentARolloutLetGoRunsItsSupersededReleaseAgain(t *testing.T) {
	t.Parallel()
	k := k8stest.Start(t)
	k.Namespace(ns)
	k.InstallRolloutCRD()
	s := startServer(t, testdb.MigratedURL(t, "sqlite"))
	sc := &scene{t: t, k: k, s: s, ctx: context.Background()}
	runAgent(t, k, s, t.TempDir(), 0)
	image := "registry:5000/team/checkout:v1"
	sc.openRelease("checkout-1", "checkout", image, "")
	sc.create(tracked("checkout", image, "v1", "checkout-1", 1))
	sc.waitState("checkout-1", "healthy")

	sc.openRelease("checkout-2", "checkout", image, "")
	rollouts := k.Dynamic.Resource(k8stest.RolloutResource).Namespace(ns)
	created, err := rollouts.Create(sc.ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"name": "checkout", "namespace": ns,
			"labels":      map[string]any{cluster.TrackedLabel: "true"},
			"annotations": map[string]any{cluster.ReleaseIDAnnotation: "checkout-2"}},
		"spec": map[string]any{"workloadRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "checkout"}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Object["status"] = map[string]any{"phase": "Healthy", "observedGeneration": "1", "currentPodHash": "abc",
		"workloadObservedGeneration": strconv.FormatInt(sc.get("checkout").Generation, 10)}
	if _, err := rollouts.UpdateStatus(sc.ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sc.waitState("checkout-2", "healthy")
	sc.waitState("checkout-1", "superseded")
	sc.eventually("the server to stop counting the Deployment the Rollout took over", func() bool { return !sc.running("checkout-1") })

	if err := rollouts.Delete(sc.ctx, "checkout", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	sc.eventually("the server to count the Deployment let go as running checkout-1", func() bool { return sc.running("checkout-1") })
	if got := sc.state("checkout-1"); got != "superseded" {
		t.Errorf("checkout-1 is %s once its Deployment runs again; want it left superseded", got)
	}
}
