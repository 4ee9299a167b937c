package cluster

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A Deployment first seen with an exceeded progress deadline: the
// condition counts unless it names a ReplicaSet of the Deployment that
// runs another pod template than the Deployment's; whatever cannot be
// told keeps it counting.
func TestAnExceededDeadlineFirstSeenCountsUnlessItNamesAnotherTemplatesReplicaSet(t *testing.T) {
	template := func(version string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "checkout", VersionLabel: version}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "checkout", Image: "registry:5000/team/checkout:" + version}}}}
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: "shop", UID: "d-uid", Generation: 3},
		Spec: appsv1.DeploymentSpec{Template: template("v1")},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Conditions: []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
			LastUpdateTime: metav1.NewTime(time.Date(2026, 10, 6, 12, 0, 0, 0, time.UTC)),
			Message:        `ReplicaSet "checkout-5d9c" has timed out progressing.`}}}}
	owned := func(version string) *appsv1.ReplicaSet {
		tpl := template(version)
		tpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = "5d9c"
		yes := true
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "checkout-5d9c", Namespace: "shop",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "checkout", UID: "d-uid", Controller: &yes}}},
			Spec: appsv1.ReplicaSetSpec{Template: tpl}}
	}
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "checkout-5d9c")
	for name, c := range map[string]struct {
		rs      *appsv1.ReplicaSet
		err     error
		message string
		stale   bool
	}{
		"it names the ReplicaSet of the template that runs": {rs: owned("v1")},
		"it names the ReplicaSet of the failed template":    {rs: owned("v2"), stale: true},
		"it names another owner's ReplicaSet":               {rs: func() *appsv1.ReplicaSet { rs := owned("v2"); rs.OwnerReferences = nil; return rs }()},
		"its ReplicaSet is gone":                            {err: notFound},
		"the agent may not read ReplicaSets":                {err: apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "checkout-5d9c", nil)},
		"its message is not the deployment controller's":    {rs: owned("v2"), message: "timed out"},
	} {
		t.Run(name, func(t *testing.T) {
			d := d.DeepCopy()
			if c.message != "" {
				d.Status.Conditions[0].Message = c.message
			}
			asked := ""
			get := func(namespace, name string) (*appsv1.ReplicaSet, error) {
				asked = namespace + "/" + name
				return c.rs, c.err
			}
			got := staleDeadlines{}.stale(d, get)
			if (got != nil) != c.stale {
				t.Errorf("stale %v, want %v", got, c.stale)
			}
			if c.message == "" && asked != "shop/checkout-5d9c" {
				t.Errorf("read ReplicaSet %q; want shop/checkout-5d9c, the one the condition names", asked)
			}
		})
	}
}

// The ReplicaSet is read once per condition, not at every event of the
// Deployment; once its template changes, it is read again.
func TestTheReplicaSetANamedDeadlineIsAboutIsReadOncePerTemplate(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: "shop", UID: "d-uid", Generation: 3},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "checkout", Image: "a:v1"}}}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Conditions: []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
			LastUpdateTime: metav1.NewTime(time.Date(2026, 10, 6, 12, 0, 0, 0, time.UTC)),
			Message:        `ReplicaSet "checkout-5d9c" has timed out progressing.`}}}}
	yes := true
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "checkout-5d9c", Namespace: "shop",
		OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "checkout", UID: "d-uid", Controller: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "checkout", Image: "a:v2"}}}}}}
	reads := 0
	get := func(string, string) (*appsv1.ReplicaSet, error) { reads++; return rs, nil }
	s := staleDeadlines{}
	for range 3 {
		if s.stale(d, get) == nil {
			t.Fatal("v2's condition on v1's template counts")
		}
	}
	if reads != 1 {
		t.Errorf("%d reads of the ReplicaSet for one condition and template; want 1", reads)
	}
	// Rolled forward to v2 again, with the condition unchanged: it is
	// about the template that runs.
	d.Spec.Template.Spec.Containers[0].Image = "a:v2"
	d.Generation, d.Status.ObservedGeneration = 4, 4
	if got := s.stale(d, get); got != nil || reads != 2 {
		t.Errorf("back on v2: stale %v after %d reads; want the condition to count, after a second read", got, reads)
	}
}
