package cluster

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ripcord/ripcord/records"
)

var t0 = time.Date(2026, 10, 6, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// deployment is a tracked Deployment whose controller has observed its spec.
func deployment(mut ...func(*appsv1.Deployment)) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: "shop", UID: "uid-1", Generation: 4,
			Labels:      map[string]string{TrackedLabel: "true"},
			Annotations: map[string]string{ReleaseIDAnnotation: "c1:prod-eu/prod"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(3)), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "checkout", Image: "registry:5000/team/checkout:v2"}, {Name: "proxy", Image: "envoy:1.30"}}}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3, ReadyReplicas: 3},
	}
	for _, m := range mut {
		m(d)
	}
	return d
}

func TestDeploymentPhase(t *testing.T) {
	t.Parallel()
	deadline := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}
	for name, tc := range map[string]struct {
		mut  func(*appsv1.Deployment)
		want records.Phase
	}{
		"all replicas updated and available":        {mut: func(*appsv1.Deployment) {}, want: records.PhaseHealthy},
		"an old replica is still running":           {mut: func(d *appsv1.Deployment) { d.Status.Replicas = 4 }, want: records.PhaseProgressing},
		"updated but not yet available":             {mut: func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 2 }, want: records.PhaseProgressing},
		"available but not all on the new template": {mut: func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 1 }, want: records.PhaseProgressing},
		"progress deadline exceeded": {mut: func(d *appsv1.Deployment) {
			d.Status.Conditions = []appsv1.DeploymentCondition{deadline}
			d.Status.UpdatedReplicas = 1
		}, want: records.PhaseDegraded},
		"deadline exceeded wins over paused": {mut: func(d *appsv1.Deployment) {
			d.Status.Conditions = []appsv1.DeploymentCondition{deadline}
			d.Spec.Paused = true
		}, want: records.PhaseDegraded},
		"paused by kubectl rollout pause": {mut: func(d *appsv1.Deployment) { d.Spec.Paused = true; d.Status.UpdatedReplicas = 1 }, want: records.PhasePaused},
		"progressing condition true is not degraded": {mut: func(d *appsv1.Deployment) {
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}}
		}, want: records.PhaseHealthy},
		"replicas unset means one": {mut: func(d *appsv1.Deployment) {
			d.Spec.Replicas = nil
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}
		}, want: records.PhaseHealthy},
		"scaled to zero with nothing left is healthy": {mut: func(d *appsv1.Deployment) {
			d.Spec.Replicas = ptr(int32(0))
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: 4}
		}, want: records.PhaseHealthy},
	} {
		t.Run(name, func(t *testing.T) {
			if got := DeploymentPhase(deployment(tc.mut)); got != tc.want {
				t.Errorf("phase = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestDeploymentFact(t *testing.T) {
	t.Parallel()
	f, skip := DeploymentFact("prod-eu", deployment(), t0)
	if skip != nil {
		t.Fatalf("skipped: %v", skip)
	}
	want := records.Fact{Source: records.SourceDeployment, Cluster: "prod-eu", Namespace: "shop", Name: "checkout",
		UID: "uid-1", Generation: 4, ObservedGeneration: 4, Phase: records.PhaseHealthy, ReleaseID: "c1:prod-eu/prod",
		Images: []string{"registry:5000/team/checkout:v2", "envoy:1.30"}, ObservedAt: t0}
	want.FactID = want.ID()
	if f.FactID != want.FactID || f.Phase != want.Phase || f.ReleaseID != want.ReleaseID || len(f.Images) != 2 ||
		f.Images[0] != want.Images[0] || !f.ObservedAt.Equal(t0) || f.Source != want.Source || f.Cluster != "prod-eu" {
		t.Errorf("fact = %+v\nwant %+v", f, want)
	}
	if err := f.Validate(); err != nil {
		t.Errorf("the server would refuse the fact: %v", err)
	}
}

func TestDeploymentFactIsSkippedWhenItCannotBeTrusted(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		mut  func(*appsv1.Deployment)
		code string
	}{
		"the controller has not seen the new spec: its status is the old release's": {
			mut: func(d *appsv1.Deployment) { d.Generation = 5 }, code: SkipNotObserved},
		"the release id is on the pod template, not the Deployment": {mut: func(d *appsv1.Deployment) {
			d.Spec.Template.Annotations = d.Annotations
			d.Annotations = nil
		}, code: SkipNoReleaseID},
	} {
		t.Run(name, func(t *testing.T) {
			f, skip := DeploymentFact("prod-eu", deployment(tc.mut), t0)
			if skip == nil || skip.Code != tc.code {
				t.Fatalf("fact %+v, skip %v; want skip %s", f, skip, tc.code)
			}
		})
	}
}

func TestDeploymentFactIDIgnoresScaleOnlyStatusChurn(t *testing.T) {
	t.Parallel()
	a, _ := DeploymentFact("prod-eu", deployment(func(d *appsv1.Deployment) { d.Status.ReadyReplicas = 1; d.Status.AvailableReplicas = 1 }), t0)
	b, _ := DeploymentFact("prod-eu", deployment(func(d *appsv1.Deployment) { d.Status.ReadyReplicas = 2; d.Status.AvailableReplicas = 2 }), t0.Add(time.Second))
	if a.FactID != b.FactID {
		t.Errorf("two Progressing observations of one generation got ids %s and %s; a resync would count twice", a.FactID, b.FactID)
	}
	c, _ := DeploymentFact("prod-eu", deployment(), t0)
	if c.FactID == a.FactID {
		t.Error("Healthy and Progressing of one generation share an id: the Healthy fact would be dropped as a repeat")
	}
}

// rollout is an Argo Rollout as the dynamic client reads it.
func rollout(mut func(map[string]any)) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"name": "baggage", "namespace": "air", "uid": "uid-r", "generation": int64(7),
			"annotations": map[string]any{ReleaseIDAnnotation: "b9:prod-eu/prod"}},
		"spec": map[string]any{
			"strategy": map[string]any{"canary": map[string]any{"steps": []any{
				map[string]any{"setWeight": int64(20)}, map[string]any{"pause": map[string]any{}}, map[string]any{"setWeight": int64(100)}}}},
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "baggage", "image": "registry:5000/air/baggage:v9"}}}}},
		"status": map[string]any{"observedGeneration": "7", "phase": "Paused", "currentStepIndex": int64(1),
			"currentPodHash": "6f7d9c", "abort": false},
	}}
	if mut != nil {
		mut(u.Object)
	}
	return u
}

func TestRolloutFactTakesPhaseStepAbortAndPodHashAsTheyAre(t *testing.T) {
	t.Parallel()
	f, skip := RolloutFact("prod-eu", rollout(nil), t0)
	if skip != nil {
		t.Fatalf("skipped: %v", skip)
	}
	if f.Source != records.SourceRollout || f.Phase != records.PhasePaused || f.Step != 1 || f.StepCount != 3 ||
		f.PodHash != "6f7d9c" || f.Abort || f.Generation != 7 || f.ObservedGeneration != 7 ||
		f.ReleaseID != "b9:prod-eu/prod" || len(f.Images) != 1 || f.Images[0] != "registry:5000/air/baggage:v9" {
		t.Errorf("fact = %+v", f)
	}
	if err := f.Validate(); err != nil {
		t.Errorf("the server would refuse the fact: %v", err)
	}
	aborted, _ := RolloutFact("prod-eu", rollout(func(o map[string]any) {
		st := o["status"].(map[string]any)
		st["abort"], st["phase"] = true, "Degraded"
	}), t0)
	if !aborted.Abort || aborted.Phase != records.PhaseDegraded || aborted.FactID == f.FactID {
		t.Errorf("aborted fact = %+v", aborted)
	}
}

func TestRolloutFactIsSkippedWhenItCannotBeTrusted(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		mut  func(map[string]any)
		code string
	}{
		"observedGeneration behind (the engine's Healthy with the old pod hash)": {
			mut: func(o map[string]any) { o["status"].(map[string]any)["observedGeneration"] = "6" }, code: SkipNotObserved},
		"observedGeneration not written yet": {
			mut: func(o map[string]any) { delete(o["status"].(map[string]any), "observedGeneration") }, code: SkipNotObserved},
		"observedGeneration that is a hash (old controllers)": {
			mut: func(o map[string]any) { o["status"].(map[string]any)["observedGeneration"] = "5d4f8b" }, code: SkipNotObserved},
		"no release id": {
			mut: func(o map[string]any) { delete(o["metadata"].(map[string]any), "annotations") }, code: SkipNoReleaseID},
		"phase not written yet": {
			mut: func(o map[string]any) { delete(o["status"].(map[string]any), "phase") }, code: SkipUnknownPhase},
	} {
		t.Run(name, func(t *testing.T) {
			f, skip := RolloutFact("prod-eu", rollout(tc.mut), t0)
			if skip == nil || skip.Code != tc.code {
				t.Fatalf("fact %+v, skip %v; want skip %s", f, skip, tc.code)
			}
		})
	}
}

func TestRolloutFactReadsANumericObservedGeneration(t *testing.T) {
	t.Parallel()
	f, skip := RolloutFact("prod-eu", rollout(func(o map[string]any) { o["status"].(map[string]any)["observedGeneration"] = int64(7) }), t0)
	if skip != nil || f.ObservedGeneration != 7 {
		t.Errorf("fact %+v, skip %v", f, skip)
	}
}

func TestWorkloadRefNamesADeploymentOrSaysWhyNot(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		ref     any
		want    string
		isRef   bool
		wantErr bool
	}{
		"own template":           {ref: nil},
		"a Deployment":           {ref: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "checkout"}, want: "checkout", isRef: true},
		"a ReplicaSet":           {ref: map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "checkout"}, isRef: true, wantErr: true},
		"a Deployment unnamed":   {ref: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}, isRef: true, wantErr: true},
		"another apps group API": {ref: map[string]any{"apiVersion": "apps/v1beta1", "kind": "Deployment", "name": "checkout"}, isRef: true, wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			u := rollout(func(o map[string]any) {
				if tc.ref != nil {
					o["spec"].(map[string]any)["workloadRef"] = tc.ref
				}
			})
			got, isRef, err := WorkloadRef(u)
			if got != tc.want || isRef != tc.isRef || (err != nil) != tc.wantErr {
				t.Errorf("WorkloadRef = %q, %v, %v; want %q, %v, error %v", got, isRef, err, tc.want, tc.isRef, tc.wantErr)
			}
		})
	}
}

// A Rollout with spec.workloadRef takes the referenced Deployment's images
// only once Argo has observed that Deployment's current template; before,
// its phase describes the previous template.
func TestWithWorkloadRefWaitsForArgoToObserveTheDeployment(t *testing.T) {
	t.Parallel()
	d := deployment(withImage("registry:5000/air/baggage:v10"))
	d.Generation = 3
	for name, tc := range map[string]struct {
		observed any
		want     []string
		skip     string
	}{
		"observed":                {observed: "3", want: []string{"registry:5000/air/baggage:v10", "envoy:1.30"}},
		"observed, as a number":   {observed: int64(3), want: []string{"registry:5000/air/baggage:v10", "envoy:1.30"}},
		"the previous template":   {observed: "2", skip: SkipNotObserved},
		"not observed at all yet": {skip: SkipNotObserved},
	} {
		t.Run(name, func(t *testing.T) {
			u := rollout(func(o map[string]any) {
				spec := o["spec"].(map[string]any)
				delete(spec, "template")
				spec["workloadRef"] = map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": d.Name}
				if tc.observed != nil {
					o["status"].(map[string]any)["workloadObservedGeneration"] = tc.observed
				}
			})
			f, skip := RolloutFact("prod-eu", u, t0)
			if skip != nil {
				t.Fatalf("RolloutFact skipped: %v", skip)
			}
			f, skip = WithWorkloadRef(f, u, d)
			switch {
			case tc.skip != "" && (skip == nil || skip.Code != tc.skip):
				t.Errorf("WithWorkloadRef = %v, %v; want skipped %s", f.Images, skip, tc.skip)
			case tc.skip == "" && (skip != nil || !slices.Equal(f.Images, tc.want)):
				t.Errorf("WithWorkloadRef = %v, %v; want images %v", f.Images, skip, tc.want)
			}
		})
	}
}
