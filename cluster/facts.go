package cluster

import (
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ripcord/ripcord/records"
)

// Why a status is not sent (Skip.Code, and the label of
// ripcord_agent_facts_skipped_total).
const (
	SkipNotObserved  = "not_observed"
	SkipNoReleaseID  = "no_release_id"
	SkipUnknownPhase = "unknown_phase"
	// SkipWorkloadRef: a Rollout's spec.workloadRef names a Deployment
	// that could not be read, so its images are not known.
	SkipWorkloadRef = "workload_ref"
	// SkipReferenced: a tracked Rollout's spec.workloadRef references the
	// Deployment, which Argo keeps at 0 replicas; the Rollout is the
	// workload.
	SkipReferenced = "referenced_by_rollout"
)

// Skip says why a workload's status makes no fact.
type Skip struct {
	Code   string
	Reason string
}

func (s *Skip) Error() string { return s.Reason }

func skipf(code, format string, args ...any) *Skip {
	return &Skip{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// DeploymentFact is what a Deployment's status says, as a fact. It returns
// a *Skip when there is nothing trustworthy to send: the controller has not
// observed the current spec yet (its status then describes the previous
// one), or the Deployment names no release.
func DeploymentFact(cluster string, d *appsv1.Deployment, now time.Time) (records.Fact, *Skip) {
	return deploymentFact(cluster, d, now, nil)
}

// deploymentFact is DeploymentFact ignoring a ProgressDeadlineExceeded
// condition last updated at stale (see deploymentPhase).
func deploymentFact(cluster string, d *appsv1.Deployment, now time.Time, stale *metav1.Time) (records.Fact, *Skip) {
	if d.Status.ObservedGeneration != d.Generation {
		return records.Fact{}, skipf(SkipNotObserved, "status.observedGeneration %d != metadata.generation %d", d.Status.ObservedGeneration, d.Generation)
	}
	release := d.Annotations[ReleaseIDAnnotation]
	if release == "" {
		return records.Fact{}, skipf(SkipNoReleaseID, "no %s annotation on the Deployment's metadata", ReleaseIDAnnotation)
	}
	f := records.Fact{
		Source: records.SourceDeployment, Cluster: cluster, Namespace: d.Namespace, Name: d.Name,
		UID: string(d.UID), Generation: d.Generation, ObservedGeneration: d.Status.ObservedGeneration,
		Phase: deploymentPhase(d, stale), Images: images(d.Spec.Template.Spec.Containers), ReleaseID: release,
		ObservedAt: now.UTC(),
	}
	f.FactID = f.ID()
	return f, nil
}

// DeploymentPhase maps a Deployment's status to a Rollout-style phase:
// Degraded once the controller gave up (ProgressDeadlineExceeded), Paused
// while spec.paused, Healthy when every desired replica runs the current
// template and is available and no old replica is left, else Progressing.
func DeploymentPhase(d *appsv1.Deployment) records.Phase {
	return deploymentPhase(d, nil)
}

// deploymentPhase is DeploymentPhase, but a ProgressDeadlineExceeded
// condition last updated at stale says nothing: it is the one the
// controller keeps from a revision the Deployment no longer runs, until
// the current one makes progress (the rollback's rolloutState ignores it
// the same way).
func deploymentPhase(d *appsv1.Deployment, stale *metav1.Time) records.Phase {
	if c := deadlineExceeded(d); c != nil && (stale == nil || !c.LastUpdateTime.Equal(stale)) {
		return records.PhaseDegraded
	}
	if d.Spec.Paused {
		return records.PhasePaused
	}
	desired := int32(1)
	if d.Spec.Replicas != nil {
		desired = *d.Spec.Replicas
	}
	s := d.Status
	if s.UpdatedReplicas == desired && s.AvailableReplicas == desired && s.Replicas == desired {
		return records.PhaseHealthy
	}
	return records.PhaseProgressing
}

func images(cs []corev1.Container) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Image)
	}
	return out
}

// rolloutPhases are the values of an Argo Rollout's status.phase, taken
// as they are.
var rolloutPhases = map[string]records.Phase{
	"Progressing": records.PhaseProgressing, "Paused": records.PhasePaused,
	"Healthy": records.PhaseHealthy, "Degraded": records.PhaseDegraded,
}

// RolloutFact is what an Argo Rollout (argoproj.io/v1alpha1, read as an
// unstructured object) says, as a fact: phase, current step, abort and
// currentPodHash as the Rollouts controller wrote them. Like
// DeploymentFact it returns a *Skip when the status does not describe the
// current spec, there is no release id or the phase is not one it knows.
func RolloutFact(cluster string, u *unstructured.Unstructured, now time.Time) (records.Fact, *Skip) {
	obj := u.Object
	observed, err := observedGeneration(obj)
	if err != nil {
		return records.Fact{}, skipf(SkipNotObserved, "%v", err)
	}
	if observed != u.GetGeneration() {
		return records.Fact{}, skipf(SkipNotObserved, "status.observedGeneration %d != metadata.generation %d", observed, u.GetGeneration())
	}
	release := u.GetAnnotations()[ReleaseIDAnnotation]
	if release == "" {
		return records.Fact{}, skipf(SkipNoReleaseID, "no %s annotation on the Rollout's metadata", ReleaseIDAnnotation)
	}
	phaseText, _, _ := unstructured.NestedString(obj, "status", "phase")
	phase, known := rolloutPhases[phaseText]
	if !known {
		return records.Fact{}, skipf(SkipUnknownPhase, "status.phase %q is not a Rollout phase (Progressing, Paused, Healthy, Degraded)", phaseText)
	}
	step, _, _ := unstructured.NestedInt64(obj, "status", "currentStepIndex")
	steps, _, _ := unstructured.NestedSlice(obj, "spec", "strategy", "canary", "steps")
	abort, _, _ := unstructured.NestedBool(obj, "status", "abort")
	podHash, _, _ := unstructured.NestedString(obj, "status", "currentPodHash")
	f := records.Fact{
		Source: records.SourceRollout, Cluster: cluster, Namespace: u.GetNamespace(), Name: u.GetName(),
		UID: string(u.GetUID()), Generation: u.GetGeneration(), ObservedGeneration: observed,
		Phase: phase, Step: int(step), StepCount: len(steps), PodHash: podHash, Abort: abort,
		Images: rolloutImages(obj), ReleaseID: release, ObservedAt: now.UTC(),
	}
	f.FactID = f.ID()
	return f, nil
}

// observedGeneration reads status.observedGeneration, which Argo Rollouts
// writes as a string ("5") and other controllers as a number.
func observedGeneration(obj map[string]any) (int64, error) {
	return statusGeneration(obj, "observedGeneration")
}

// statusGeneration reads a generation number from status.field, written
// as a string or a number.
func statusGeneration(obj map[string]any, field string) (int64, error) {
	v, found, _ := unstructured.NestedFieldNoCopy(obj, "status", field)
	if !found {
		return 0, fmt.Errorf("no status.%s yet", field)
	}
	switch g := v.(type) {
	case string:
		n, err := strconv.ParseInt(g, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("status.%s %q is not a generation number", field, g)
		}
		return n, nil
	case int64:
		return g, nil
	case float64:
		return int64(g), nil
	default:
		return 0, fmt.Errorf("status.%s has type %T, want a string or a number", field, v)
	}
}

// WithWorkloadRef completes the fact of a Rollout whose pod template is
// the Deployment d (spec.workloadRef) with d's images, once the Rollout's
// status.workloadObservedGeneration says Argo has seen d's current
// template. Before that the phase describes the previous template, as
// with observedGeneration, and the fact is skipped: sent with the new
// images, the old template's Healthy would make the new release healthy.
func WithWorkloadRef(f records.Fact, u *unstructured.Unstructured, d *appsv1.Deployment) (records.Fact, *Skip) {
	observed, err := statusGeneration(u.Object, "workloadObservedGeneration")
	if err != nil {
		return records.Fact{}, skipf(SkipNotObserved, "%v: the Rollout has not observed Deployment %s's template", err, d.Name)
	}
	if observed != d.Generation {
		return records.Fact{}, skipf(SkipNotObserved, "status.workloadObservedGeneration %d != generation %d of spec.workloadRef Deployment %s",
			observed, d.Generation, d.Name)
	}
	f.Images = images(d.Spec.Template.Spec.Containers)
	return f, nil
}

// WorkloadRef is the Deployment a Rollout takes its pod template from
// (spec.workloadRef; Argo scales that Deployment to 0 and runs its
// template itself). ok is false for a Rollout with its own
// spec.template; err says why a reference cannot be followed.
func WorkloadRef(u *unstructured.Unstructured) (name string, ok bool, err error) {
	ref, found, _ := unstructured.NestedMap(u.Object, "spec", "workloadRef")
	if !found {
		return "", false, nil
	}
	kind, _, _ := unstructured.NestedString(ref, "kind")
	apiVersion, _, _ := unstructured.NestedString(ref, "apiVersion")
	name, _, _ = unstructured.NestedString(ref, "name")
	if kind != "Deployment" || (apiVersion != "" && apiVersion != "apps/v1") || name == "" {
		return "", true, fmt.Errorf("spec.workloadRef %s %s %q is not a Deployment (apps/v1) by name", apiVersion, kind, name)
	}
	return name, true, nil
}

func rolloutImages(obj map[string]any) []string {
	cs, _, _ := unstructured.NestedSlice(obj, "spec", "template", "spec", "containers")
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		if m, ok := c.(map[string]any); ok {
			if img, ok := m["image"].(string); ok {
				out = append(out, img)
			}
		}
	}
	return out
}
