package cluster

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ripcord/ripcord/cluster/actionapi"
)

// The failed revision exceeded its progress deadline (the usual way a
// Deployment's deploy fails), and the rollback goes back to the previous
// revision's ReplicaSet. The controller's first status of the patched
// generation still carries that old ProgressDeadlineExceeded condition
// until it sees progress: it says nothing about the rollback, which must
// wait for its own rollout rather than fail on it.
func TestTheFailedRevisionsExceededDeadlineDoesNotFailTheRollback(t *testing.T) {
	t.Parallel()
	port := podServers(t, healthy)
	exceeded := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
		Reason: "ProgressDeadlineExceeded", LastUpdateTime: metav1.NewTime(t0.Add(-time.Hour))}
	cs := fake.NewClientset(servedDeployment(func(d *appsv1.Deployment) {
		d.Status.Replicas, d.Status.UpdatedReplicas = 2, 1 // the stuck new pod and the old one
		d.Status.Conditions = []appsv1.DeploymentCondition{exceeded}
	})...)
	gets := 0
	cs.PrependReactor("get", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		if gets++; gets == 5 { // the controller scaled the failed revision down: progress
			d, err := cs.Tracker().Get(appsv1.SchemeGroupVersion.WithResource("deployments"), "shop", "checkout")
			if err != nil {
				return true, nil, err
			}
			dep := d.(*appsv1.Deployment).DeepCopy()
			dep.Status.Replicas, dep.Status.UpdatedReplicas, dep.Status.AvailableReplicas = 1, 1, 1
			dep.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing,
				Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", LastUpdateTime: metav1.NewTime(t0)}}
			if err := cs.Tracker().Update(appsv1.SchemeGroupVersion.WithResource("deployments"), dep, "shop"); err != nil {
				return true, nil, err
			}
		}
		return false, nil, nil
	})
	res := newRollbacker(cs, port).Rollback(context.Background(), rollbackAction())
	if res.Status != actionapi.StatusDone {
		t.Errorf("result %s %s: %s; want the rollback to wait out the old condition and succeed", res.Outcome, res.ErrorType, res.Reason)
	}
}

// A deadline the patched revision itself exceeds still fails it at once.
func TestAProgressDeadlineExceededAfterThePatchFailsTheRollback(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset(servedDeployment(func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 0 })...)
	cs.PrependReactor("patch", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		before, err := cs.Tracker().Get(appsv1.SchemeGroupVersion.WithResource("deployments"), "shop", "checkout")
		if err != nil {
			return true, nil, err
		}
		unpatched := before.(*appsv1.Deployment).Spec
		// Once the patch is applied (the spec changed), the controller
		// marks the patched revision's progress deadline exceeded. It used
		// to sleep 50 ms and update once, ignoring the error: on a loaded
		// machine (CI, 2026-12-03) it could read the deployment before the
		// patch, and the fake's status update, which writes the whole
		// object, then raced the patch: no condition on the patched
		// revision ever came and the rollback timed out.
		go func() {
			for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				d, err := cs.AppsV1().Deployments("shop").Get(context.Background(), "checkout", metav1.GetOptions{})
				if err != nil || equality.Semantic.DeepEqual(d.Spec, unpatched) {
					continue
				}
				d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
					Reason: "ProgressDeadlineExceeded", LastUpdateTime: metav1.NewTime(t0)}}
				if _, err := cs.AppsV1().Deployments("shop").UpdateStatus(context.Background(), d, metav1.UpdateOptions{}); err == nil {
					return
				}
			}
		}()
		return false, nil, nil
	})
	res := newRollbacker(cs, 1).Rollback(context.Background(), rollbackAction())
	if res.ErrorType != ErrTypeRolloutFailed {
		t.Errorf("result %s %s: %s; want rollout_failed", res.Outcome, res.ErrorType, res.Reason)
	}
}
