package cluster

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// The Deployment is deleted once it rolled out, while its health is being
// checked: the rollback fails as deployment_not_found, as it does when the
// Deployment is gone before the patch, not as an unexplained API error.
func TestADeploymentDeletedDuringTheHealthCheckIsNotFound(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset(servedDeployment()...)
	// Deleted when the agent first lists its pods, after the rollout read it.
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		_ = cs.Tracker().Delete(appsv1.SchemeGroupVersion.WithResource("deployments"), "shop", "checkout")
		return false, nil, nil
	})
	res := newRollbacker(cs, 1).Rollback(context.Background(), rollbackAction())
	if res.ErrorType != ErrTypeDeploymentNotFound {
		t.Errorf("result %s %s: %s; want deployment_not_found", res.Outcome, res.ErrorType, res.Reason)
	}
}
