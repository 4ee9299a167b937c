package cluster

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ripcord/ripcord/records"
)

// A Deployment first seen with an exceeded progress deadline: the
// condition counts unless it names a ReplicaSet of the Deployment that
// runs another pod template than the Deployment's; whatever cannot be
// told keeps it counting.
func TestAnExceededDeadlineFirstSeenCountsUnlessItNamesAnotherTemplatesReplicaSet(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// exceededNaming gives a Deployment the controller's exceeded progress
// deadline with message, stuck on its failed revision.
func exceededNaming(message string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		d.Status.UpdatedReplicas, d.Status.AvailableReplicas = 1, 2
		d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
			Reason: "ProgressDeadlineExceeded", LastUpdateTime: metav1.NewTime(t0.Add(-time.Hour)), Message: message}}
	}
}

// The ReplicaSet an exceeded deadline names is read outside the
// watcher's lock: a slow API server held every other event (a Rollout's,
// a Deployment's deletion) and the inventory for as long as the read
// took, up to replicaSetTimeout per Deployment. Once read, it still
// decides the fact.
func TestTheReplicaSetIsReadWithoutHoldingUpTheWatcher(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var sent []records.Fact
	w := newWatcher("prod-eu", func() time.Time { return t0 }, func(f records.Fact) error {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, f)
		return nil
	}, newMetrics(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	d := deployment(exceededNaming(`ReplicaSet "checkout-5d9c" has timed out progressing.`))
	yes := true
	failed := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "checkout-5d9c", Namespace: "shop",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "checkout", UID: d.UID, Controller: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "checkout", Image: "registry:5000/team/checkout:v3"}}}}}}
	cs := fake.NewSimpleClientset(d)
	reading, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	cs.PrependReactor("get", "replicasets", func(k8stesting.Action) (bool, runtime.Object, error) {
		once.Do(func() { close(reading) })
		<-release
		return true, failed, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w.deployments(ctx, cs, "shop", time.Hour, nil, newListState(DefaultListPatience))
	select {
	case <-reading:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the watcher never read the ReplicaSet the exceeded deadline names")
	}
	inventoried := make(chan struct{})
	go func() { w.inventory(); close(inventoried) }()
	select {
	case <-inventoried:
	case <-time.After(5 * time.Second):
		t.Error("the inventory waited for the read of a ReplicaSet: the watcher holds its lock while it reads")
	}
	close(release)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(sent)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no fact once the ReplicaSet was read")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 1 || sent[0].Phase != records.PhaseProgressing {
		t.Errorf("sent %v; want Progressing: the deadline is about another template's ReplicaSet", phases(sent))
	}
	<-inventoried
}

// What cannot be told stays Degraded through the watch: a message that
// names no ReplicaSet (the controller's wording when the Deployment had
// no new ReplicaSet) reads none; a fact made again on another workload's
// event, with no read for this Deployment, counts the condition and does
// not record it, so the Deployment's own next event reads the ReplicaSet.
func TestAnExceededDeadlineThatCannotBeToldStaysDegraded(t *testing.T) {
	t.Parallel()
	var sent []records.Fact
	w := newWatcher("prod-eu", func() time.Time { return t0 }, func(f records.Fact) error { sent = append(sent, f); return nil },
		newMetrics(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	reads := 0
	w.replicaSets = func(string, string) (*appsv1.ReplicaSet, error) {
		reads++
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "checkout-5d9c")
	}
	unnamed := deployment(exceededNaming(`Deployment "checkout" has timed out progressing.`))
	w.read = w.readReplicaSet(unnamed)
	w.observe(w.deploymentFact, unnamed, true)
	if len(sent) != 1 || sent[0].Phase != records.PhaseDegraded || reads != 0 {
		t.Errorf("a deadline naming no ReplicaSet: sent %v after %d reads; want Degraded, no read", phases(sent), reads)
	}

	w.deadlines, sent = staleDeadlines{}, nil
	named := deployment(exceededNaming(`ReplicaSet "checkout-5d9c" has timed out progressing.`))
	w.read = nil // a Rollout's event makes the Deployment's fact again
	w.observe(w.deploymentFact, named, true)
	if len(sent) != 1 || sent[0].Phase != records.PhaseDegraded || reads != 0 {
		t.Errorf("a named deadline not read: sent %v after %d reads; want Degraded, no read under the lock", phases(sent), reads)
	}
	if ns, name := w.deadlines.toRead(named); ns+"/"+name != "shop/checkout-5d9c" {
		t.Errorf("after it, the Deployment's next event reads %q; want shop/checkout-5d9c", ns+"/"+name)
	}
	w.read = w.readReplicaSet(named)
	w.observe(w.deploymentFact, named, true)
	if len(sent) != 2 || sent[1].Phase != records.PhaseDegraded || reads != 1 {
		t.Errorf("its ReplicaSet gone: sent %v after %d reads; want Degraded after one read", phases(sent), reads)
	}
	if ns, name := w.deadlines.toRead(named); name != "" {
		t.Errorf("once read, the next event reads %s/%s again; want no read for the same condition and template", ns, name)
	}
}
