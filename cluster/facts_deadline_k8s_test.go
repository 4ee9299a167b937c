package cluster_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/ripcord/ripcord/cluster"
	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/k8stest"
	"github.com/ripcord/ripcord/records"
)

// v2 of a tracked Deployment never becomes available and exceeds its
// progress deadline; the agent reports it Degraded. The rollback goes back
// to v1, whose ReplicaSet the controller reuses: it keeps v2's
// ProgressDeadlineExceeded condition in the patched generation's status
// until it sees progress. That condition is not the rollback's: no fact of
// the rollback release may say Degraded, and it ends Healthy.
func staleDeadlineFacts(t *testing.T, k *k8stest.Cluster, port int) {
	d := trackedDeployment("shop", "stale", "registry:5000/team/stale:v1", "stale-1")
	// The deploy labels the pods with their version, so v1's template,
	// patched back, is v1's ReplicaSet's again.
	d.Spec.Template.Labels = map[string]string{"app": "stale", cluster.VersionLabel: "v1"}
	d.Labels[cluster.VersionLabel] = "v1"
	d.Spec.MinReadySeconds, d.Spec.ProgressDeadlineSeconds = 3, ptrTo(int32(4))
	createDeployment(t, k, d)
	deployments := k.Kube.AppsV1().Deployments("shop")
	waitWithin(t, time.Minute, "stale v1 to roll out", func() bool {
		cur, err := deployments.Get(t.Context(), "stale", metav1.GetOptions{})
		return err == nil && cur.Status.ObservedGeneration == cur.Generation && cur.Status.AvailableReplicas == 1 && cur.Status.Replicas == 1
	})
	sink := &factSink{}
	startAgent(t, sink, cluster.Config{Rollouts: cluster.RolloutsOff, Resync: time.Hour}, k.Kube, k.Dynamic)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go crashLoop(ctx, t, k, "stale", "registry:5000/team/stale:v2")
	if err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := deployments.Get(t.Context(), "stale", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Template.Spec.Containers[0].Image = "registry:5000/team/stale:v2"
		cur.Labels[cluster.VersionLabel], cur.Spec.Template.Labels[cluster.VersionLabel] = "v2", "v2"
		cur.Annotations[cluster.ReleaseIDAnnotation] = "stale-2"
		_, err = deployments.Update(t.Context(), cur, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	waitWithin(t, time.Minute, "v2 reported Degraded", func() bool { return hasFact(sink, "stale-2", records.PhaseDegraded) })

	res := realRollbacker(k, port).Rollback(t.Context(), realAction("stale"))
	if res.Status != actionapi.StatusDone {
		t.Fatalf("rollback %s %s: %s", res.Outcome, res.ErrorType, res.Reason)
	}
	waitWithin(t, time.Minute, "the rollback release reported Healthy", func() bool { return hasFact(sink, "rb-stale", records.PhaseHealthy) })
	for _, f := range sink.factsOf(records.SourceDeployment) {
		if f.ReleaseID == "rb-stale" && f.Phase == records.PhaseDegraded {
			t.Errorf("fact %s of generation %d: the rollback release reported Degraded from v2's exceeded deadline", f.FactID, f.Generation)
		}
	}
}

func hasFact(s *factSink, release string, phase records.Phase) bool {
	for _, f := range s.factsOf(records.SourceDeployment) {
		if f.ReleaseID == release && f.Phase == phase {
			return true
		}
	}
	return false
}

func ptrTo[T any](v T) *T { return &v }
