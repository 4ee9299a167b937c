package cluster

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ripcord/ripcord/cluster/actionapi"
)

// The version to roll back to is the server's, chosen from its records
// (eligibility); an action that names none must not make the agent pick
// one from the cluster, such as an older ReplicaSet nobody vouched for.
func TestARollbackWithoutATargetAlertsAndLeavesTheDeploymentAlone(t *testing.T) {
	t.Parallel()
	objs := servedDeployment()
	d := objs[0].(*appsv1.Deployment)
	for _, rs := range []appsv1.ReplicaSet{replicaSet("rs-v1", "v1", t0, d), replicaSet("rs-v2", "v2", t0.Add(time.Hour), d)} {
		rs.Labels["app"] = "checkout" // selected by the Deployment, as its own are
		objs = append(objs, rs.DeepCopy())
	}
	cs := fake.NewClientset(append([]runtime.Object(nil), objs...)...)
	res := newRollbacker(cs, 1).Rollback(context.Background(), rollbackAction(func(a *actionapi.Action) { a.TargetVersion = "" }))
	if res.Outcome != actionapi.OutcomeAlert || res.ErrorType != ErrTypeNoPreviousVersion || patches(cs) != 0 {
		t.Errorf("result %+v after %d patches; want an alert (no_previous_version) and no patch", res, patches(cs))
	}
}
