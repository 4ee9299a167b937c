package cluster

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ripcord/ripcord/records"
)

func TestWatcherSendsChangesAndEveryResyncButNotRepeats(t *testing.T) {
	t.Parallel()
	var sent []records.Fact
	w := newWatcher("prod-eu", func() time.Time { return t0 }, func(f records.Fact) error { sent = append(sent, f); return nil },
		newMetrics(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	read := func(obj any) (records.Fact, *Skip, string) {
		f, skip := DeploymentFact("prod-eu", obj.(*appsv1.Deployment), t0)
		return f, skip, "shop/checkout"
	}
	progressing := deployment(func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 1 })
	w.observe(read, progressing, true) // first sight
	w.observe(read, deployment(func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 2 }), false)
	if len(sent) != 1 {
		t.Fatalf("sent %d facts; a status change within one phase must not send a second", len(sent))
	}
	w.observe(read, deployment(), false) // Healthy
	w.observe(read, deployment(), true)  // resync: the same state again
	if len(sent) != 3 || sent[1].Phase != records.PhaseHealthy || sent[2].FactID != sent[1].FactID {
		t.Errorf("sent %v; want Progressing, Healthy, and Healthy again on the resync", phases(sent))
	}
	w.observe(read, deployment(func(d *appsv1.Deployment) { d.Generation = 5 }), true)
	if len(sent) != 3 {
		t.Error("a status the controller has not observed was sent")
	}
}

func phases(fs []records.Fact) []records.Phase {
	out := make([]records.Phase, len(fs))
	for i, f := range fs {
		out[i] = f.Phase
	}
	return out
}

// A tracked Deployment that is deleted is reported as such (phase
// Deleted), so the server stops counting its last report as running.
func TestWatcherReportsADeletedWorkload(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var sent []records.Fact
	got := func() []records.Fact {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(sent)
	}
	w := newWatcher("prod-eu", func() time.Time { return t0 }, func(f records.Fact) error {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, f)
		return nil
	}, newMetrics(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	cs := fake.NewSimpleClientset(deployment())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	synced := w.deployments(ctx, cs, "shop", time.Hour, nil, newListState(DefaultListPatience)).synced
	waitFor := func(what string, cond func([]records.Fact) bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(got()); {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; sent %v", what, phases(got()))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("the first sight", func(fs []records.Fact) bool { return synced() && len(fs) == 1 })
	if err := cs.AppsV1().Deployments("shop").Delete(ctx, "checkout", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the deletion", func(fs []records.Fact) bool { return len(fs) == 2 })
	d := got()[1]
	if d.Phase != records.PhaseDeleted || d.Source != records.SourceDeployment || d.UID != "uid-1" ||
		d.Namespace != "shop" || d.Name != "checkout" || d.ReleaseID != "c1:prod-eu/prod" || d.FactID != d.ID() {
		t.Errorf("deletion fact = %+v, want phase Deleted of shop/checkout uid-1", d)
	}
	if err := d.Validate(); err != nil {
		t.Errorf("the server would refuse the deletion fact: %v", err)
	}
}

// The failed revision exceeded its progress deadline, and the rollback
// goes back to the previous template (its ReplicaSet). The controller
// keeps the old ProgressDeadlineExceeded condition, same lastUpdateTime,
// in the first statuses of the patched generation: the old watch sent
// them as Degraded, failing the rollback release on its first fact. A
// scale of the failed revision keeps its condition meaningful, and a
// deadline the rolled-back template exceeds itself is Degraded again.
func TestWatcherIgnoresTheFailedRevisionsDeadlineAfterTheTemplateChanged(t *testing.T) {
	t.Parallel()
	var sent []records.Fact
	w := newWatcher("prod-eu", func() time.Time { return t0 }, func(f records.Fact) error { sent = append(sent, f); return nil },
		newMetrics(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	exceeded := func(at time.Time) func(*appsv1.Deployment) {
		return func(d *appsv1.Deployment) {
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
				Reason: "ProgressDeadlineExceeded", LastUpdateTime: metav1.NewTime(at), LastTransitionTime: metav1.NewTime(at)}}
		}
	}
	stuck := func(d *appsv1.Deployment) {
		d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas = 4, 1, 3
	}
	generation := func(spec, observed int64) func(*appsv1.Deployment) {
		return func(d *appsv1.Deployment) { d.Generation, d.Status.ObservedGeneration = spec, observed }
	}
	rolledBack := func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Image = "registry:5000/team/checkout:v1"
		d.Annotations[ReleaseIDAnnotation] = "rb1:prod-eu/prod"
	}
	failedAt := t0.Add(-time.Hour)
	for _, step := range []struct {
		what string
		d    *appsv1.Deployment
		want records.Phase // "" when no fact is sent
	}{
		{"the failed revision exceeds its deadline", deployment(exceeded(failedAt), stuck), records.PhaseDegraded},
		{"a scale keeps the template: still the failed revision's deadline",
			deployment(exceeded(failedAt), stuck, generation(5, 5), func(d *appsv1.Deployment) { d.Spec.Replicas = ptr(int32(4)) }),
			records.PhaseDegraded},
		{"the rollback's patch, not observed yet", deployment(exceeded(failedAt), stuck, generation(6, 5), rolledBack), ""},
		{"the first status of the patched generation keeps the old condition",
			deployment(exceeded(failedAt), stuck, generation(6, 6), rolledBack), records.PhaseProgressing},
		{"the rolled-back template exceeds its own deadline",
			deployment(exceeded(t0), stuck, generation(6, 6), rolledBack), records.PhaseDegraded},
	} {
		n := len(sent)
		w.observe(w.deploymentFact, step.d, false)
		switch {
		case step.want == "" && len(sent) != n:
			t.Errorf("%s: sent %s; want nothing", step.what, sent[n].Phase)
		case step.want != "" && (len(sent) != n+1 || sent[n].Phase != step.want):
			t.Errorf("%s: sent %v; want %s", step.what, phases(sent[n:]), step.want)
		}
	}
}
