package cluster_test

import (
	"context"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
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

// An agent that starts after the rollback never saw the revision change:
// the Deployment runs v1's template again while its controller still
// keeps v2's ProgressDeadlineExceeded condition, which names v2's
// ReplicaSet. The agent reads that ReplicaSet, finds another template
// than the one running, and reports the rollback release Progressing, not
// Degraded. To hold the rollback there (the controller replaces the
// condition at the rollback's first progress), an admission policy keeps
// v2's pod from being deleted until the agent has reported.
func staleDeadlineAfterRestart(t *testing.T, k *k8stest.Cluster, _ int) {
	d := trackedDeployment("shop", "late", "registry:5000/team/late:v1", "late-1")
	d.Spec.Template.Labels = map[string]string{"app": "late", cluster.VersionLabel: "v1"}
	d.Labels[cluster.VersionLabel] = "v1"
	surge, unavailable := intstr.FromInt32(1), intstr.FromInt32(0)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}}
	d.Spec.ProgressDeadlineSeconds = ptrTo(int32(4))
	createDeployment(t, k, d)
	deployments := k.Kube.AppsV1().Deployments("shop")
	get := func() *appsv1.Deployment {
		cur, err := deployments.Get(t.Context(), "late", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cur
	}
	waitWithin(t, time.Minute, "late v1 to roll out", func() bool {
		cur := get()
		return cur.Status.ObservedGeneration == cur.Generation && cur.Status.AvailableReplicas == 1 && cur.Status.Replicas == 1
	})
	// v2's pod can never be scheduled, so it never turns ready and v2
	// exceeds its progress deadline for certain. (A pod the fake node runs
	// is ready at once, and one flipped to crash-looping after that could
	// be seen ready first: the rollout then completed, or the rollback
	// made progress that replaced the condition, depending on timing.)
	setVersion := func(version, release string) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			cur := get()
			cur.Spec.Template.Spec.NodeSelector = nil
			if version == "v2" {
				cur.Spec.Template.Spec.NodeSelector = map[string]string{"ripcord.test/no-such-node": "true"}
			}
			cur.Spec.Template.Spec.Containers[0].Image = "registry:5000/team/late:" + version
			cur.Labels[cluster.VersionLabel], cur.Spec.Template.Labels[cluster.VersionLabel] = version, version
			cur.Annotations[cluster.ReleaseIDAnnotation] = release
			_, err := deployments.Update(t.Context(), cur, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	setVersion("v2", "late-2")
	exceeded := func(cur *appsv1.Deployment) string {
		for _, c := range cur.Status.Conditions {
			if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
				return c.Message
			}
		}
		return ""
	}
	waitWithin(t, time.Minute, "v2 to exceed its progress deadline", func() bool {
		cur := get()
		return cur.Status.ObservedGeneration == cur.Generation && exceeded(cur) != ""
	})
	v2Message := exceeded(get())

	keepPods(t, k, "late", "v2")
	setVersion("v1", "rb-late")
	waitWithin(t, time.Minute, "the rollback's generation observed with v2's condition kept", func() bool {
		cur := get()
		return cur.Status.ObservedGeneration == cur.Generation && exceeded(cur) == v2Message
	})

	sink := &factSink{}
	startAgent(t, sink, cluster.Config{Rollouts: cluster.RolloutsOff, Resync: time.Hour}, k.Kube, k.Dynamic)
	waitWithin(t, time.Minute, "a fact of the rollback release", func() bool {
		for _, f := range sink.factsOf(records.SourceDeployment) {
			if f.ReleaseID == "rb-late" {
				return true
			}
		}
		return false
	})
	if cur := get(); exceeded(cur) != v2Message {
		t.Fatalf("the rollback moved on before the agent reported (%v): the test proves nothing", cur.Status.Conditions)
	}
	letPodsGo(t, k)
	waitWithin(t, time.Minute, "the rollback release reported Healthy", func() bool { return hasFact(sink, "rb-late", records.PhaseHealthy) })
	for _, f := range sink.factsOf(records.SourceDeployment) {
		if f.ReleaseID == "rb-late" && f.Phase == records.PhaseDegraded {
			t.Errorf("fact %s of generation %d: the rollback release reported Degraded from v2's exceeded deadline (%s)", f.FactID, f.Generation, v2Message)
		}
	}
}

const keepPodsPolicy = "ripcord-test-keep-pods"

// keepPods has the API server refuse to delete the pods of app at version
// (a ValidatingAdmissionPolicy), and waits until it does.
func keepPods(t *testing.T, k *k8stest.Cluster, app, version string) {
	t.Helper()
	admission := k.Kube.AdmissionregistrationV1()
	fail := admissionregistrationv1.Fail
	_, err := admission.ValidatingAdmissionPolicies().Create(t.Context(), &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: keepPodsPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app, cluster.VersionLabel: version}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "kept by the test"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = admission.ValidatingAdmissionPolicyBindings().Create(t.Context(), &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: keepPodsPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: keepPodsPolicy,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { letPodsGo(t, k) })
	pods := k.Kube.CoreV1().Pods("shop")
	waitWithin(t, time.Minute, "the API server to refuse deleting "+app+" "+version+"'s pods", func() bool {
		list, err := pods.List(t.Context(), metav1.ListOptions{LabelSelector: "app=" + app + "," + cluster.VersionLabel + "=" + version})
		if err != nil || len(list.Items) == 0 {
			return false
		}
		err = pods.Delete(t.Context(), list.Items[0].Name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err)
	})
}

// letPodsGo removes keepPods' policy.
func letPodsGo(t *testing.T, k *k8stest.Cluster) {
	admission := k.Kube.AdmissionregistrationV1()
	for _, err := range []error{
		admission.ValidatingAdmissionPolicyBindings().Delete(context.Background(), keepPodsPolicy, metav1.DeleteOptions{}),
		admission.ValidatingAdmissionPolicies().Delete(context.Background(), keepPodsPolicy, metav1.DeleteOptions{}),
	} {
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("remove the policy that keeps pods: %v", err)
		}
	}
}
